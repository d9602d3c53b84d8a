"""Gate (dtype_device): RMSNorm(d, dtype=...) builds its gain in the dtype it is given.

fidelity discover's forwarded-argument operators found the constructor's `dtype` unheld: `dtype=dtype`
dropped from the gain's `torch.ones` (or replaced by None) builds a float32 gain whatever was asked, and every
gate passed: a gain of ones is exact in any dtype, and a float64 input promotes the product, so no output
moves. What moves is the parameter an optimiser trains. Here the module is built in float64 (and float32, the
default) and its gain must be in that dtype. Reading: parameters whose dtype is not the one asked; it must be 0.
The module is the torch subject's own code (as test_rmsnorm_module_contract.py); other subjects skip it.
"""
import importlib

import pytest
import torch

from fidelity.gates.compare import assert_bound

REFERENCE_MODULE = "fidelity.impl.torch.rmsnorm"
DTYPES = [pytest.param(torch.float32, id="f32"), pytest.param(torch.float64, id="f64")]


@pytest.mark.gate(equations=["rmsnorm.gain"], mechanism="depth_attention", targets=[REFERENCE_MODULE],
                  gate_class="dtype_device")
@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_builds_its_gain_in_the_dtype_it_is_given(subject, device, dtype):
    if subject.name != "torch":
        pytest.skip(f"{REFERENCE_MODULE} is the torch subject's own module; subject {subject.name} is held to the "
                    "mean form through its depth-attention scores")
    module = importlib.import_module(REFERENCE_MODULE)
    norm = module.RMSNorm(4, dtype=dtype, device=device)
    off = [f"{name} {p.dtype}" for name, p in norm.named_parameters() if p.dtype != dtype]
    assert_bound(len(off), at_most=0, reading_name="parameters_off_dtype",
                 what=f"RMSNorm(4, dtype={dtype}): parameters in another dtype: {off}")
