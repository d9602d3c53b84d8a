"""Gate (defaults_as_shipped): the mHC residual built with no dtype holds the interface's default dtype.

The other mHC defaults gates pass dtype= themselves (they run in float32 and float64), so a default
dtype changed in the factory passed them all (discover's mutant: dtype float32 -> float16). The
interface (fidelity.mechanisms.mhc_residual) declares `dtype = torch.float32` for the parameters; an
optimiser and every call then run in that dtype. Built with n and C alone, on the device under test,
every parameter must be float32. Reading: how many parameters are not.
"""
import pytest
import torch

from fidelity.gates.compare import assert_bound

MECH = "mhc_residual"
INTERFACE_DEFAULT_DTYPE = torch.float32  # fidelity.mechanisms.mhc_residual: dtype's default


@pytest.mark.gate(equations=["mhc.table5.n", "mhc.eq7", "mhc.eq8"], mechanism=MECH, gate_class="defaults_as_shipped")
@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_module_built_with_no_dtype_has_float32_parameters(subject, device, layout):
    module = subject.get(MECH)(4, 2, layout=layout, device=device)
    off = {name: str(p.dtype) for name, p in module.named_parameters() if p.dtype != INTERFACE_DEFAULT_DTYPE}
    assert_bound(len(off), at_most=0, reading_name="parameters_not_float32",
                 what=f"parameters of factory(4, 2, layout={layout!r}) not in float32: {off}")
