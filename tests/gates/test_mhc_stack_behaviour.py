"""Gates: what mHC's Eq. 3 makes of a hidden-in, hidden-out stack, whatever its parameters are called (mhc_stack).

Eq. 3: x_{l+1} = H_res x_l + H_post^T F_l(H_pre x_l), with (Eq. 8) H_pre in (0, 1)^n, H_post in (0, 2)^n and
(Eq. 6) H_res doubly stochastic: H_res 1 = 1 and 1^T H_res = 1^T; each may depend on x_l (the dynamic terms of
Eq. 7), token by token. With the papers' replicated streams (mhc.layout.replicated) x_0 = 1 h (n copies of the
hidden h), and the readout r(x) = c_r 1^T x with c_r = 1 for the papers' sum, 1/n for a mean readout
(Capability(readout="mean")). A stack with no streams (streams="none") is n = 1: H_res = 1. Let c = c_r n, the
copies of h the readout makes of x_0: c = n, a whole number >= 1, for the sum (the gates do not know n); c = 1 for
a mean or for no streams (fidelity.gates.stream_layout says which, from the declaration, and skips the rest).

(a) Every body zero. Then x_{l+1} = H_res x_l, and by induction x_l = 1 h: H_res 1 h = 1 h (rows sum to one).
    Body l is called once, on H_pre x_l = (sum_j H_pre,j) h, a positive multiple of h per token (H_pre > 0), and
    the output is c_r 1^T 1 h = c h, the same whole c for every token.
(b) Only the first body non-zero, F_1(u_1) = f per token, u_1 what body 1 was called on. Then
    x_1 = H_res 1 h + H_post^T f = 1 h + p f (p = H_post of layer 1), and for l >= 1 the zero bodies leave
    x_{l+1} = H_res x_l, so 1^T x_L = 1^T x_1 (columns sum to one) = n h + (1^T p) f. The output is
    c h + s f with the SAME c as in (a) and s = c_r 1^T p in (0, 2c) per token (0 < p_j < 2).

A stack that is not Eq. 3 fails them: a softmax over the earlier layers' outputs (DenseFormer-like,
out = sum_i a_i v_i with v_0 = h and v_i the bodies' outputs) returns a_0 h with every body zero, a_0 in (0, 1):
no whole copies of h; an H_res that is not stochastic scales the copies token by token; an H_pre or H_post outside
its range feeds a body a negative multiple of h or weighs f outside (0, 2c).

Setup (stack_behaviour.py): the stack built by its factory as shipped around three of residual_stack.py's bodies,
each wrapped to keep what it is called on (and to return zeros where the gate silences it); its own parameters
moved to seeded values in [-1/4, 1/4] (any values do; there Sinkhorn-Knopp's steps converge far below float32
rounding); a seeded hidden of 16 tokens, so that a defect showing on some tokens only is seen. In float64 where the
subject computes in it, else float32.

Tolerance: 64 eps of the dtype, floor 1 (O(1) values): with every body zero the identity is exact but for the
rounding of a few products of n x n matrices and Sinkhorn's normalisations (float64 readings ~1e-15; float32
~1e-6, under 64 eps = 7.6e-6); the defects above leave O(1) (a_0 - 1, stochastic row sums 2, a tanh H_post's sign).
"""
import pytest
import torch

import stack_behaviour as behaviour
from fidelity.gates import readings
from fidelity.gates.attribution import checking
from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.stream_layout import copies_read_out, require_copies_of_the_hidden

MECH = "mhc_stack"
EQ3 = "Eq. 3: F_l(H_pre x_l)"
TOL = Tolerance(eps_multiple=64, floor=1.0)
EQUATIONS = ["mhc.eq3", "mhc.eq6", "mhc.eq8", "mhc.layout.replicated"]


def _copies(subject, out: torch.Tensor, h: torch.Tensor) -> int:
    """c: 1 where the declaration says so (mean readout, no streams), else the whole number nearest the output's
    multiple of h (the sum of n copies, n the package's), at least 1."""
    declared = copies_read_out(subject, MECH)
    return declared if declared is not None else max(1, round(float((out * h).sum() / (h * h).sum())))


@pytest.mark.gate(equations=EQUATIONS, mechanism=MECH)
def test_with_every_body_zero_the_stack_returns_whole_copies_of_the_hidden(subject, device):
    """(a): every body called once on a positive multiple of h per token; the output c h, c whole (n for the
    papers' sum, 1 for a mean readout or no streams). Reading: the worst relative error of both."""
    held = require_copies_of_the_hidden(subject, MECH)
    kept, stack, h = behaviour.setup(subject, MECH, device, [True] * behaviour.LAYERS)
    out = behaviour.run(stack, kept, h, EQ3)
    inputs = torch.stack([k.inputs[0] for k in kept])
    multiples = behaviour.per_token(inputs, h)
    with checking("mhc.eq3", "mhc.eq8", "mhc.layout.replicated"):  # x_l = 1 h, H_pre > 0
        assert_bound(float(multiples.min()), at_least=torch.finfo(h.dtype).tiny,
                     what=f"with every body zero, the least multiple of h a body was called on, per token "
                          f"(expected a positive multiple: H_pre x_l with x_l = n copies of h, H_pre > 0; {held})")
        worst = assert_close(inputs, multiples * h, TOL, what="with every body zero, each body's input vs the "
                             f"multiple of h nearest it (expected H_pre x_l = (sum_j H_pre,j) h; {held})")
    c = _copies(subject, out, h)
    with checking("mhc.eq3", "mhc.eq6", "mhc.layout.replicated"):  # x_l stays 1 h, the readout of n copies
        worst = max(worst, assert_close(out, c * h, TOL, what=f"with every body zero, the stack's output vs {c} "
                                        f"whole copies of the hidden (expected c h for every token, c the copies "
                                        f"the readout makes of n copies of h; {held})"))
    readings.record(worst)


@pytest.mark.gate(equations=EQUATIONS, mechanism=MECH)
def test_one_body_alone_adds_its_output_to_the_same_copies_of_the_hidden(subject, device):
    """(b): with the first body live and the later ones zero, the output is c h + s_t F_1(u_1) per token, c the
    copies of the same stack with every body zero, 0 < s_t < 2c. Reading: the worst relative error of the form."""
    held = require_copies_of_the_hidden(subject, MECH)
    kept, stack, h = behaviour.setup(subject, MECH, device, [True] * behaviour.LAYERS)
    c = _copies(subject, behaviour.run(stack, kept, h, EQ3), h)
    kept[0].silent = False
    out = behaviour.run(stack, kept, h, EQ3)
    with torch.no_grad():
        f = kept[0].body(kept[0].inputs[0])  # the oracle: body 1's own output on what it was called on
    s = behaviour.per_token(out - c * h, f)
    with checking("mhc.eq3", "mhc.eq6", "mhc.layout.replicated"):  # the copies kept, f carried through H_res
        worst = assert_close(out, c * h + s * f, TOL, what=f"with the first body alone, the stack's output vs {c} "
                             f"copies of the hidden plus a multiple of the body's output, per token (expected "
                             f"c h + s F_1(u_1), the same c as with every body zero; {held})")
    with checking("mhc.eq3", "mhc.eq6", "mhc.eq8"):  # s = c_r 1^T H_post, kept whole by columns summing to one
        what = (f"with the first body alone, the weight s of its output in the stack's output, per token (expected "
                f"0 < s < 2c = {2 * c}: the readout of H_post's weights, each in (0, 2); {held})")
        assert_bound(float(s.min()), at_least=torch.finfo(h.dtype).tiny, what=what, reading_name="least_weight")
        assert_bound(float(s.max()), at_most=2 * c * (1 - TOL.rtol(h.dtype)), what=what, reading_name="most_weight")
    readings.record(worst)
