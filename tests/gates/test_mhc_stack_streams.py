"""Gate: H_res doubly stochastic (mHC Eq. 6) as observed through a hidden-in, hidden-out stack (mhc_stack, Eq. 3).

Through the stack only the hidden is seen, so this gate holds what the papers' replicated streams make of
Eq. 6 (each stream starts as the hidden, the readout sums them), on a subject that declares that layout
(Capability(streams="replicated"); fidelity.gates.stream_layout). With a layer body that returns zero, Eq. 3
leaves x_{l+1} = H_res x_l, and columns summing to one (1^T H_res = 1^T) keep the streams' sum: a zero-body
layer after a layer that made the streams differ leaves the summed readout as it was.

Rows summing to one (H_res 1 = 1) keep copies copies, but only inside: the summed readout of H_res x is
1^T H_res x, which the rows do not enter, and the streams are read only by H_pre for the next body, whose
parameters the gate cannot tell apart from the others'. So the rows are not held here (the stream-interface
gates of mhc_residual hold them).

The stack is built by its factory as shipped around residual_stack.py's bodies (the zero body is its tanh MLP
with the output layer zeroed), its own parameters moved to seeded values in [-1/4, 1/4]: at an init near the
identity a wrong H_res hardly moves anything, and at a quarter of residual_stack's spread the logits stay small
enough for Sinkhorn-Knopp's t_max steps to converge far below float32 rounding. In float64 where the subject
computes in it, else float32.

Tolerance: the reading is relative to the largest output entry. Float64 leaves ~1e-16, float32 ~1e-7; a matrix
normalised along its rows only misses its column sums by ~1e-3 at that point: 1e-5 sits between them.
"""
import pytest
import torch

import residual_stack as stack_gates
from fidelity.gates import readings
from fidelity.gates.stream_layout import require_layout

MECH = "mhc_stack"
RELATIVE_TOLERANCE = 1e-5
SPREAD = 0.25


def _zero_body(dtype, device) -> torch.nn.Module:
    """residual_stack's body with its output layer zeroed: F(x) = 0 for every x, a module like any body."""
    body = stack_gates.bodies(dtype, device)[0]
    with torch.no_grad():
        for p in body[-1].parameters():
            p.zero_()
    return body


@pytest.mark.gate(equations=["mhc.eq6", "mhc.eq3"], mechanism=MECH)
def test_a_zero_body_layer_keeps_the_sum_of_the_streams_a_layer_before_it_made(subject, device):
    """Columns of H_res sum to one: a stack of (body, zero body) returns what the one-layer stack of (body) returns
    when it holds the same parameters (each copied from its namesake in the two-layer stack), since the summed
    readout of H_res x is the sum of x."""
    require_layout(subject, MECH, "replicated")
    dtype = torch.float64 if subject.supports(MECH, dtype=torch.float64) else torch.float32
    body = stack_gates.bodies(dtype, device)[0]
    two, _, own_two = stack_gates.built(subject, MECH, dtype, device, [body, _zero_body(dtype, device)])
    one, _, own_one = stack_gates.built(subject, MECH, dtype, device, [body])
    unmatched = [name for name, p in own_one.items() if name not in own_two or own_two[name].shape != p.shape]
    assert not unmatched, (f"the one-layer stack's parameters {unmatched} have no namesake of the same shape in the "
                           "two-layer stack: the gate cannot give both stacks the first layer's parameters")
    g = torch.Generator().manual_seed(stack_gates.SEED + 1)
    with torch.no_grad():
        for p in own_two.values():
            p.copy_(((torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 - 1) * SPREAD).to(p))
        for name, p in own_one.items():
            p.copy_(own_two[name])
        h = stack_gates.hidden(stack_gates.SEED + 2, dtype, device)
        before, after = one(h), two(h)
    reading = readings.record(float((after - before).abs().max() / before.abs().max()))
    assert reading <= RELATIVE_TOLERANCE, (
        f"replicated streams: a zero-body layer changed the summed hidden by {reading:.3g} of its largest entry "
        f"(<= {RELATIVE_TOLERANCE:g}): H_res's columns do not sum to one, so the streams' sum is not kept")
