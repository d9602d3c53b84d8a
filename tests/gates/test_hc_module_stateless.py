"""Gate (stateless): one hyper-connection module, reused, keeps no state between calls.

The module is built by its factory (static HC and DHC), every parameter written to the fixture
hc.module_dynamic / hc.module_static's values (non-trivial, so the dynamic part is on), and called
with the fixture's body on the fixture's H (A), on a seeded H of the same shape and dtype (B), and
on the fixture's H again (fidelity.gates.statelessness). Both A outputs must agree bit for bit (the
same inputs through the same deterministic kernels on one device), B must not get A's output, B must
give what B gives on a fresh module built alike, and the module's parameters, buffers, attributes and
whatever objects it holds, the implementation module and the global RNGs must be as they were before
the first call. An iteration counter, a cache or a buffer updated in forward shows there after the
first call, though it might change the output only after a hundred; the gates that build a fresh
module per case never see it. State the subject declares it keeps (Capability.keeps_state) is not
counted, and the gate says what it was told.
"""
import pytest
import torch

from fidelity.gates.statelessness import assert_stateless, built_twice, declared_kept_state
from hc_module_point import MECH, module_at_fixture

STATE = "hc.stateless"  # a difference is state kept between calls: listed under its cause
CASES = {"dynamic": "hc.module_dynamic", "static": "hc.module_static"}
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]


@pytest.mark.gate(equations=["hc.eq2", "hc.eq5", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.alg2", STATE],
                  mechanism=MECH, gate_class="stateless")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", list(CASES))
def test_one_module_reused_gives_the_same_bits_on_every_call(subject, device, mode, dtype):
    fixture_id = CASES[mode]
    (module, H, body), (fresh, _, _) = built_twice(
        lambda: module_at_fixture(subject, fixture_id, mode == "dynamic", dtype, device))
    H_b = torch.randn(H.shape, generator=torch.Generator().manual_seed(7301), dtype=torch.float64).to(H)
    assert_stateless(lambda: module(H, body), lambda: module(H_b, body), fresh_other=lambda: fresh(H_b, body),
                     modules={"module": module}, implementation=subject.modules.get(MECH, ()),
                     kept=declared_kept_state(subject, MECH),
                     cause=[STATE], what=f"{mode} HC module, {dtype}, the fixture's H and body")
