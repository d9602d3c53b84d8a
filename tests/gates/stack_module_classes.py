"""What the module gate classes hold of a hidden-in, hidden-out stack (mhc_stack, hc_stack), whatever its names.

A stack is built by its factory as shipped around residual_stack.py's bodies (its seeded tanh MLPs D -> 2D -> D)
and called on residual_stack's seeded hidden h. The gates pass no init and see the stack's parameters only through
named_parameters() (less the bodies'), so what they hold is read from behaviour or from a structure every package
has:

- streams_as_the_spec (defaults as shipped, n): with every body returning zero (its output layer zeroed), Eq. 3
  (mHC) and Eq. 5 (HC) leave each layer x_{l+1} = H_res x_l (mHC) or A_r^T H (HC). The papers' replicated streams
  start as n copies of h, and the summed readout of n copies is n h: for mHC at any point, since H_res's columns
  sum to one (Eq. 6) and 1^T H_res x = 1^T x; for HC at Eq. 14's init, A_r = I. So the output is c h for a whole
  number c, and c is the n the package ships. Both are read at the init as shipped; whole copies first (a
  failure is the equations', not n's), then c against the spec's n (a failure is n's alone);
- one_connection_per_layer (defaults as shipped): Eq. 3's H_l^pre, H_l^post, H_l^res and Eq. 7's phi_l, b_l,
  alpha_l (HC: Eq. 5's per-layer A^k, B^k, Eq. 14's init for layer k) belong to layer l, and nothing else in the
  stack holds a parameter (the readout sums). So a stack of L layers holds L times what a one-layer stack holds,
  however the package names or stacks its tensors: a connection reused by every layer holds the same count at
  every L, and a tensor shared by all layers adds a constant;
- parameters_alive: in a stack of three layers (residual_stack.REACH_LAYERS) at residual_stack's seeded point,
  each parameter tensor alone is moved by a seeded direction (entries uniform in [-1/8, 1/8]) and the largest
  output change is read. A tensor the forward never reads (a layer that runs another layer's connection, a
  coefficient replaced by a constant) moves nothing; one scaled to nothing moves the output within rounding. Dead
  is as for gradient reach (fidelity.gates.gradient_reach.dead_among: 0, or at most 32 eps of the largest change
  among the stack's tensors), with the same excuse for the first and last connection's H_res under replicated
  streams (residual_stack.ends_left_dead_by_the_paper: the paper's equations leave them without an effect on the
  summed readout). Unlike the gradient, a finite move needs no backward (a forward-only subject is held too) and
  does not read a parameter whose value is used through a detached path as dead: it names what the forward
  ignores, the gradient what the backward loses;
- same_in_train_and_eval: the three-layer stack at the seeded point gives the same bits in training and eval
  mode (fidelity.gates.train_eval: neither paper has a mode-dependent part).
"""
from __future__ import annotations

import math

import pytest
import torch

import residual_stack as stack_gates
from fidelity.gates.attribution import checking
from fidelity.gates.compare import assert_bound
from fidelity.gates.gradient_reach import ROUNDING_EPS, dead_among, negligible_fraction
from fidelity.gates.stream_layout import copies_read_out, declared_layout, require_layout
from fidelity.gates.train_eval import assert_same_in_train_and_eval

COUNTED_LAYERS = (1, 2, 3)
# the summed readout against whole copies, relative to its largest entry: float64 rounds to ~1e-16 and float32 to
# ~1e-7 (a Sinkhorn's columns at its init converge far below both); the stream count itself is a whole number
WHOLE_COPIES_TOLERANCE = 1e-5
# each entry moved by a seeded uniform draw in [-1/8, 1/8]: a finite move of O(1) parameters, far above rounding;
# continuous, so no direction lies in a map's null space by construction (+-1 entries can sum to 0, and HC's
# summed readout sees the last B only through its sum)
STEP = 0.125


def finest_dtype(subject, mech) -> torch.dtype:
    """float64 where the subject computes in it, else float32."""
    return torch.float64 if subject.supports(mech, dtype=torch.float64) else torch.float32


def zero_bodies(dtype, device, layers: int) -> list[torch.nn.Module]:
    """residual_stack's bodies with their output layer zeroed: F(x) = 0 for every x, modules like any body."""
    made = stack_gates.bodies(dtype, device, layers)
    with torch.no_grad():
        for body in made:
            for p in body[-1].parameters():
                p.zero_()
    return made


def require_copies_read_out(subject, mech, layout_declared: bool) -> None:
    """Skip, saying why, where n copies of the hidden do not show as n h: layout_declared, a subject that does not
    declare replicated streams (mhc_stack leaves the layout to the package; hc_stack's interface is the paper's
    replicated streams, §2.1); always, a declared readout that returns one copy of n copies
    (fidelity.gates.stream_layout.copies_read_out: a mean, or no streams)."""
    if layout_declared:
        require_layout(subject, mech, "replicated")
    if copies_read_out(subject, mech) is not None:  # a mean of n copies, or one stream, is h whatever n is
        pytest.skip(f"subject {subject.name} declares a readout that returns {copies_read_out(subject, mech)} copy "
                    f"of n copies of the hidden for {mech} (a mean, or no streams): n does not show in its output")


def whole_copies(subject, mech, device, dtype, copies_equations: tuple[str, ...]) -> int:
    """The stack as shipped around zero bodies returns c h for a whole c >= 1 (else a failure attributed to
    copies_equations); c. Reading whole_copies_error: the relative error from c h."""
    stack, _, _ = stack_gates.built(subject, mech, dtype, device, zero_bodies(dtype, device, stack_gates.LAYERS))
    h = stack_gates.hidden(stack_gates.SEED + 2, dtype, device)
    with torch.no_grad():
        out = stack(h)
    along = float((out * h).sum() / (h * h).sum())  # the output's component along h, in copies of h
    copies = round(along)
    with checking(*copies_equations):
        error = float((out - copies * h).abs().max() / (copies * h).abs().max()) if copies >= 1 else math.inf
        assert_bound(error, at_most=WHOLE_COPIES_TOLERANCE, reading_name="whole_copies_error",
                     what=f"every body returning zero, the stack as shipped ({str(dtype).removeprefix('torch.')}) "
                          f"must return n x h for a whole n >= 1 (n replicated streams summed); its output is "
                          f"{along:.6g} x h along h, and off {copies} x h by this relative error (an H_res or A_r "
                          "that does not keep the streams' sum, or a readout other than the sum, leaves whole copies)")
    return copies


def streams_as_the_spec(subject, mech, device, *, spec_n: int, copies_equations: tuple[str, ...],
                        n_equations: tuple[str, ...], layout_declared: bool) -> None:
    """The stack as shipped, zero bodies: the output is c h for a whole c (copies_equations), and c = spec_n
    (n_equations). Readings: the relative error from whole copies, and c. Where it runs: require_copies_read_out."""
    require_copies_read_out(subject, mech, layout_declared)
    copies = whole_copies(subject, mech, device, finest_dtype(subject, mech), copies_equations)
    with checking(*n_equations):
        assert_bound(copies, at_least=spec_n, at_most=spec_n, reading_name="streams",
                     what=f"every body returning zero, the stack as shipped returns {copies} copies of h: it "
                          f"replicates the hidden into {copies} streams, the spec's n is {spec_n}")


def own_parameter_count(subject, mech, device, layers: int) -> int:
    stack, _, own = stack_gates.built(subject, mech, torch.float32, device,
                                      stack_gates.bodies(torch.float32, device, layers))
    return sum(p.numel() for p in own.values())


def one_connection_per_layer(subject, mech, device) -> None:
    """The stack's own parameter count at L = 1, 2, 3 layers is L times the one-layer stack's, and that is > 0."""
    counts = {layers: own_parameter_count(subject, mech, device, layers) for layers in COUNTED_LAYERS}
    per_layer = counts[1]
    off = {layers: count - layers * per_layer for layers, count in counts.items()}
    assert_bound(per_layer, at_least=1, reading_name="parameters_per_layer",
                 what=f"a one-layer stack as shipped holds {per_layer} parameters of its own: its connection has none")
    assert_bound(max(abs(v) for v in off.values()), at_most=0, reading_name="parameters_off_per_layer",
                 what=f"the stack's own parameters by number of layers, {counts}: a stack of L layers holds one "
                      f"connection of its own per layer, L x {per_layer}; off by {off} (the same count at every L: "
                      "one connection reused by every layer; a constant: a tensor shared by all layers)")


def _moved_outputs(stack, h, own: dict[str, torch.Tensor]) -> dict[str, float]:
    """name -> max |stack(h) with that tensor alone moved by a seeded direction (entries in [-STEP, STEP])
    - stack(h)|, the tensor put back after each."""
    g = torch.Generator().manual_seed(stack_gates.SEED + 5)
    changes = {}
    with torch.no_grad():
        before = stack(h).double()
        for name, p in own.items():
            direction = (torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 - 1) * STEP
            kept = p.detach().clone()
            p.add_(direction.to(p))
            changes[name] = float((stack(h).double() - before).abs().max())
            p.copy_(kept)
    return changes


def parameters_alive(subject, mech, device) -> None:
    """Each own tensor of a three-layer stack at the seeded point, moved alone, moves the output beyond rounding."""
    dtype = finest_dtype(subject, mech)
    stack, h, own = stack_gates._at_seeded_point(subject, mech, dtype, device, stack_gates.REACH_LAYERS)
    changes = _moved_outputs(stack, h.detach(), own)
    dead = dead_among(changes, dtype)
    sliced = declared_layout(subject, mech) == "sliced"
    excused = {} if sliced else stack_gates.ends_left_dead_by_the_paper(list(own), dead)
    named = [n for n in dead if n not in excused]
    live = sorted((n for n in changes if n not in dead), key=lambda n: -changes[n])[:3]
    said = "; excused (first or last connection, streams not declared sliced, middle twin alive): " + \
        ", ".join(f"{n!r} {changes[n]:.3g} (twin {t!r} {changes[t]:.3g})" for n, t in excused.items())
    assert_bound(len(named), at_most=0, reading_name="dead_parameters",
                 what=f"each parameter of a {stack_gates.REACH_LAYERS}-layer stack moved alone by up to {STEP} per "
                      f"entry, {str(dtype).removeprefix('torch.')}: the output did not move (max |change| 0 or at "
                      f"most {ROUNDING_EPS} eps = {negligible_fraction(dtype):.3g} of the largest) for "
                      + ", ".join(f"{n!r} {changes[n]:.3g}" for n in named)
                      + "; the largest others: " + (", ".join(f"{n!r} {changes[n]:.3g}" for n in live) or "none")
                      + (said if excused else ""))


def same_in_train_and_eval(subject, mech, device) -> None:
    """The three-layer stack at the seeded point, float32, called in training, eval and training mode again."""
    stack, h, _ = stack_gates._at_seeded_point(subject, mech, torch.float32, device, stack_gates.REACH_LAYERS)
    h = h.detach()
    with torch.no_grad():
        assert_same_in_train_and_eval(lambda: stack(h), modules={"stack": stack},
                                      what=f"one {stack_gates.REACH_LAYERS}-layer {mech} at a seeded point")
