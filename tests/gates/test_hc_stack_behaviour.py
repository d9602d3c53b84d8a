"""Gates: what Hyper-Connections' Eq. 5 makes of a hidden-in, hidden-out stack, whatever its parameters are called
(hc_stack).

Eq. 5: H^ = B^T T(h_0)^T + A_r^T H with h_0 = A_m^T H (Eqs. 3-4); B, A_m, A_r may depend on H (the dynamic terms of
Eqs. 10-13), token by token, and nothing bounds them. The streams start as copies of the hidden, H^0 = 1 h
(hc.setup), and the readout sums them (hc.readout_sum). Neither identity below needs a value of a parameter:

(a) Every body zero. Then H^(k+1) = A_r^T H^k, and by induction each stream is a per-token multiple of h:
    H^k = a_k h with a_k in R^n (a_0 = 1). Body k is called once, on A_m^T H^k = (A_m . a_k) h, and the output
    1^T a_L h: per token, multiples of h.
(b) Only the first body non-zero, f = T_1(h_0) per token. Then H^1 = B f + A_r^T 1 h, each stream a combination of
    h and f; A_r mixes combinations into combinations, and the sum is one: the output lies in span{h, f} per token.

A stack that adds anything else fails them: a norm's bias or mean subtraction applied to what the streams carry, a
per-channel gain, positions mixed across tokens, a bias in the readout. (The values at the init as shipped are
test_hc_stack.py's: there the coefficients are known.) The setup is stack_behaviour.py's: the stack's own parameters
at a seeded point, a hidden of 16 tokens, float64 where the subject computes in it.

Tolerance: 64 eps of the dtype, floor 1 (O(1) values): the identities are exact but for the rounding of a few
products of n x n matrices and a least-squares fit (float64 readings ~1e-15, float32 ~1e-6); a norm's bias or a
mean subtracted leaves O(1).
"""
import pytest
import torch

import stack_behaviour as behaviour
from fidelity.gates import readings
from fidelity.gates.attribution import checking
from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.stream_layout import require_copies_of_the_hidden

MECH = "hc_stack"
TOL = Tolerance(eps_multiple=64, floor=1.0)
EQUATIONS = ["hc.eq5", "hc.setup", "hc.readout_sum"]


@pytest.mark.gate(equations=EQUATIONS, mechanism=MECH)
def test_with_every_body_zero_the_stack_feeds_and_returns_multiples_of_the_hidden(subject, device):
    """(a): every body called once, on a per-token multiple of h, and the output a per-token multiple of h.
    Reading: the worst relative error of both against the nearest multiples."""
    held = require_copies_of_the_hidden(subject, MECH)
    kept, stack, h = behaviour.setup(subject, MECH, device, [True] * behaviour.LAYERS)
    out = behaviour.run(stack, kept, h, "Eq. 5: T(A_m^T H)")
    inputs = torch.stack([k.inputs[0] for k in kept])
    with checking("hc.eq5", "hc.setup"):  # H^k = a_k h, read by A_m
        worst = assert_close(inputs, behaviour.per_token(inputs, h) * h, TOL,
                             what=f"with every body zero, each body's input vs the multiple of h nearest it per token "
                                  f"(expected A_m^T H^k with every stream a multiple of h; {held})")
    with checking("hc.eq5", "hc.setup", "hc.readout_sum"):  # A_r keeps multiples, the sum of multiples is one
        worst = max(worst, assert_close(out, behaviour.per_token(out, h) * h, TOL,
                                        what=f"with every body zero, the stack's output vs the multiple of h nearest "
                                             f"it per token (expected the streams' sum, each a multiple of h; {held})"))
    readings.record(worst)


@pytest.mark.gate(equations=EQUATIONS, mechanism=MECH)
def test_one_body_alone_leaves_the_output_in_the_span_of_the_hidden_and_its_output(subject, device):
    """(b): with the first body live and the later ones zero, the output lies in span{h, T_1(h_0)} per token.
    Reading: the worst relative error against the nearest point of that span."""
    held = require_copies_of_the_hidden(subject, MECH)
    silent = [False] + [True] * (behaviour.LAYERS - 1)
    kept, stack, h = behaviour.setup(subject, MECH, device, silent)
    out = behaviour.run(stack, kept, h, "Eq. 5: T(A_m^T H)")
    with torch.no_grad():
        f = kept[0].body(kept[0].inputs[0])  # the oracle: body 1's own output on what it was called on
    with checking("hc.eq5", "hc.setup", "hc.readout_sum"):
        worst = assert_close(out, behaviour.in_span(out, h, f), TOL,
                             what=f"with the first body alone, the stack's output vs the nearest combination of the "
                                  f"hidden and the body's output, per token (expected a combination: every stream "
                                  f"is one after Eq. 5, and so is their sum; {held})")
    readings.record(worst)
