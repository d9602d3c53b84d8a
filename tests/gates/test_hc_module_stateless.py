"""Gate (stateless): one hyper-connection module, reused, gives the same bits on every call.

The module is built once by its factory (static HC and DHC), every parameter written to the fixture
hc.module_dynamic / hc.module_static's values (non-trivial, so the dynamic part is on), and called
on the same H with the same body: the same call twice (calls = 2) and the object reused over
REUSE_CALLS = 1001 calls. An iteration counter, a cache or a buffer updated in forward makes a
reused object drift; the gates that build a fresh module per case never see it. Bit-identical: the
same inputs through the same deterministic kernels on one device.
"""
import pytest
import torch

from fidelity.gates.statelessness import REUSE_CALLS, assert_same_bits_every_call
from hc_module_point import MECH, module_at_fixture

CASES = {"dynamic": "hc.module_dynamic", "static": "hc.module_static"}
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]


@pytest.mark.gate(equations=["hc.eq2", "hc.eq5", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.alg2"],
                  mechanism=MECH, gate_class="stateless")
@pytest.mark.parametrize("calls", [2, REUSE_CALLS], ids=["twice", f"reused_{REUSE_CALLS}"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", list(CASES))
def test_one_module_reused_gives_the_same_bits_on_every_call(subject, device, mode, dtype, calls):
    fixture_id = CASES[mode]
    module, H, body = module_at_fixture(subject, fixture_id, mode == "dynamic", dtype, device)
    assert_same_bits_every_call(lambda: module(H, body), calls=calls,
                                what=f"{mode} HC module, {dtype}, the same H and body")
