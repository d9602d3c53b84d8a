"""Gates: the Sinkhorn projection is stateless: the same call twice, and 1001 times, gives the same bits.

A module-level iteration counter, a warm start from the previous call's scalings, or a cache
keyed on the wrong thing makes a function's answer depend on what was called before it. Input:
a seeded 4x4 at logit scale 6 (M(20) unconverged, so a changed number of steps or another
starting point changes the output). "Twice" runs in both dtypes; the 1001-call instance in
float64 only (under the Triton CPU interpreter a call costs ~6 ms: one dtype keeps it ~6 s).
Each route the subject has (torch: autograd and manual; Triton: manual) is its own instance.
"""
import pytest
import torch

from fidelity.gates.statelessness import REUSE_CALLS, assert_same_bits_every_call

ROUTES = ["autograd", "manual"]
CASES = [("f32", torch.float32, 2), ("f64", torch.float64, 2), ("f64", torch.float64, REUSE_CALLS)]
LOGIT_SCALE = 6.0  # as test_sinkhorn_gradients.py: M(20) still unconverged (column defects 1e-4 .. 4e-2)


def _logits(dtype, device):
    g = torch.Generator().manual_seed(14005)
    return (torch.randn(4, 4, generator=g, dtype=torch.float64) * LOGIT_SCALE).to(dtype=dtype, device=device)


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn", gate_class="stateless")
@pytest.mark.parametrize("dtype_id,dtype,calls", CASES, ids=[f"{d}-{c}calls" for d, _, c in CASES])
@pytest.mark.parametrize("backward", ROUTES)
def test_the_same_call_repeated_gives_the_same_bits(subject, device, backward, dtype_id, dtype, calls):
    """sinkhorn(logits, backward=route) with the default t_max, `calls` times: every result equal to the first."""
    if not subject.supports("sinkhorn", backward):
        pytest.skip(f"subject {subject.name} has no {backward!r} backward route for sinkhorn")
    fn = subject.get("sinkhorn")
    logits = _logits(dtype, device)
    assert_same_bits_every_call(lambda: fn(logits, backward=backward), calls=calls,
                                what=f"sinkhorn ({backward} route, {dtype_id}), called {calls} times")
