"""Gate: one mHC residual module, reused over 1001 calls, gives the same bits every call.

An iteration counter that is never reset, a warm-started Sinkhorn, or a cache keyed on the
wrong thing makes a reused module drift; gates that build a fresh module per case never see it.
The module is built by its factory as shipped (float32, the default dtype; t_max and eps as
shipped), given the seeded point of mhc.module_jacobian (phi, alpha, b non-trivial, so every
coefficient depends on x and H_res is not at a fixed point after one pass) and called on the same
token with the fixture's linear body, 1001 times (fidelity.gates.statelessness.REUSE_CALLS).
"""
import pytest
import torch

from fidelity.gates.statelessness import REUSE_CALLS, assert_same_bits_every_call
from mhc_module_point import module_at_fixture

FIXTURE = "mhc.module_jacobian"


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9"], mechanism="mhc_residual",
                  gate_class="stateless")
@pytest.mark.parametrize("route", ["autograd", "manual"])
@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_one_module_reused_over_1001_calls_gives_the_same_bits(subject, device, layout, route):
    """module(x, body) called 1001 times on one module object: every output equal to the first, bit for bit."""
    module, x, body, _ = module_at_fixture(subject, FIXTURE, layout, torch.float32, device, route)
    assert_same_bits_every_call(lambda: module(x, body), calls=REUSE_CALLS,
                                what=f"one {layout}-layout module ({route} Sinkhorn)")
