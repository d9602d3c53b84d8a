"""What the hidden-in, hidden-out stack gates build and hold, for any such mechanism (mhc_stack, hc_stack).

A stack is built by its factory as shipped, factory(D, bodies, dtype=, device=), around L = 2 layer bodies the
gate makes (its own: a seeded tanh MLP D -> 2D -> D, the same for every subject and mechanism), and called on a
seeded hidden h of two tokens. What these checks hold does not depend on the streams inside:

- backward_is_the_derivative: float64 backward against central differences (along two seeded random directions
  per tensor), for h and every parameter of the stack (named_parameters() less the bodies'): a skip path detached
  from the graph still adds h to the output, so its derivative is there and the backward's is not;
- gradients_reach: in a stack of three layers, h and every parameter of the stack get a gradient that matters;
  one whose gradient is 0 or within rounding of the largest (fidelity.gates.gradient_reach) is named as dead,
  with its magnitude beside the others' (in float64, or in float32 where the subject's capability has no
  float64: a package that computes in float32 only is held too). With the papers' replicated streams, the
  paper's own equations leave the first connection's H_res without a gradient (its rows sum to one, so n equal
  streams stay equal) and the last one's (its columns sum to one and the readout sums the streams): a tensor of
  the first or last connection is not named where its twin in the middle connection (the same name, another
  layer index) is alive, and the gate says which it excused. That holds unless the subject declares sliced
  streams (each stream its own slice, so every connection's H_res mixes different values): a correct stack that
  does not declare its layout is not blamed for the papers' design. A package whose H_res is dead in every
  connection, or whose middle connection is, is named;
- stateless: one stack called on h, on another hidden, on h again gives the same bits (and gradients), the other
  hidden gives what it gives on a fresh stack built alike, and no call changes the stack's state, the
  implementation's modules or the global RNGs, the first included (fidelity.gates.statelessness);
- refusals: no body, or a width below 1, is a ValueError at construction (one instance each); width 1 builds and
  runs; a package that reads its width off the hidden (Capability(infers=("d",))) is not asked to refuse width 0;
- default_dtype: built with no dtype, every parameter of the stack is float32.

The first two move every parameter of the stack to a seeded point in [-1, 1] first (written through
named_parameters(), so any package's names do): at an init, zero dynamic weights make some gradients
legitimately zero (mHC's phi, HC's W), and mHC's b_res = 10 I makes its Sinkhorn stiff for central differences.
The stateless check holds the stack at its init as shipped.
"""
from __future__ import annotations

import re

import torch

from fidelity.gates import readings
from fidelity.gates.compare import assert_bound
from fidelity.gates.gradient_reach import dead_among, describe_dead, gradient_magnitudes
from fidelity.gates.jacobians import assert_gradcheck_every_tensor
from fidelity.gates.routes import require_gradient
from fidelity.gates.statelessness import assert_stateless, built_twice, declared_kept_state
from fidelity.gates.stream_layout import declared_layout, require_width_taken

D, LAYERS, TOKENS = 3, 2, 2
REACH_LAYERS = 3  # a middle connection, which the papers' replicated streams do not leave without a gradient
SEED = 8801
# float64 central differences at h = 1e-6 of smooth maps, gradcheck's criterion atol + rtol |numeric|
# (truncation ~1e-12, rounding ~2e-10); a detached skip path leaves O(1) entries out
FD_STEP, FD_ATOL, FD_RTOL = 1e-6, 1e-8, 1e-6


def bodies(dtype, device, layers: int = LAYERS) -> list[torch.nn.Module]:
    """The gate's own layer bodies: tanh MLPs D -> 2D -> D with seeded weights."""
    g = torch.Generator().manual_seed(SEED)
    made = []
    for _ in range(layers):
        body = torch.nn.Sequential(torch.nn.Linear(D, 2 * D), torch.nn.Tanh(), torch.nn.Linear(2 * D, D))
        with torch.no_grad():
            for p in body.parameters():
                p.copy_(torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 - 1)
        made.append(body.to(dtype=dtype, device=device))
    return made


def hidden(seed, dtype, device) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(TOKENS, D, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)


def built(subject, mech, dtype, device, layer_bodies=None):
    """(stack as its factory builds it, the bodies, the stack's own parameters by name); dtype None: not passed."""
    layer_bodies = bodies(dtype or torch.float32, device) if layer_bodies is None else layer_bodies
    dtype_kw = {} if dtype is None else {"dtype": dtype}
    stack = subject.get(mech)(D, layer_bodies, **dtype_kw, device=device)
    of_bodies = {id(p) for body in layer_bodies for p in body.parameters()}
    own = {name: p for name, p in stack.named_parameters() if id(p) not in of_bodies}
    return stack, layer_bodies, own


def _at_seeded_point(subject, mech, dtype, device, layers: int = LAYERS):
    """A stack whose own parameters are moved to seeded values in [-1, 1], and h requiring a gradient."""
    stack, _, own = built(subject, mech, dtype, device, bodies(dtype, device, layers))
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for p in own.values():
            p.copy_((torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 - 1).to(p))
    return stack, hidden(SEED + 2, dtype, device).requires_grad_(True), own


def backward_is_the_derivative(subject, mech, device) -> None:
    stack, h, own = _at_seeded_point(subject, mech, torch.float64, device)
    assert_gradcheck_every_tensor(lambda: stack(h), {"h": h, **own}, step=FD_STEP, atol=FD_ATOL, rtol=FD_RTOL,
                                  what="d stack(h) / d (h, every parameter of the stack), float64")


def gradients_reach(subject, mech, device) -> None:
    """In float64 where the subject computes in it, else in float32: a gradient against rounding is read in the
    finest dtype the subject has, so a package that computes in float32 only has its dead parameters named too."""
    dtype = torch.float64 if subject.supports(mech, dtype=torch.float64) else torch.float32
    stack, h, own = _at_seeded_point(subject, mech, dtype, device, REACH_LAYERS)
    magnitudes = gradient_magnitudes(lambda: stack(h), {"h": h, **own})
    dead = dead_among(magnitudes, dtype)
    excused = ends_left_dead_by_the_paper(list(own), dead) if declared_layout(subject, mech) != "sliced" else {}
    readings.record(len(excused), "excused_at_the_ends")
    named = [n for n in dead if n not in excused]
    said = "; excused (first or last connection, streams not declared sliced, middle twin alive): " + \
        ", ".join(f"{n!r} {magnitudes[n]:.3g} (twin {twin!r} {magnitudes[twin]:.3g})" for n, twin in excused.items())
    assert_bound(len(named), at_most=0, reading_name="dead_gradients",
                 what=f"d stack(h) / d (h, every parameter of a {REACH_LAYERS}-layer stack), "
                      f"{str(dtype).removeprefix('torch.')}: {describe_dead(magnitudes, named, dtype)}"
                      + (said if excused else ""))


def ends_left_dead_by_the_paper(names: list[str], dead: list[str]) -> dict[str, str]:
    """Dead tensors of the first or last connection -> their alive twin in the middle one. Twins share a name
    but for the layer index (digits), in named_parameters() order, REACH_LAYERS of them."""
    twins: dict[str, list[str]] = {}
    for name in names:
        twins.setdefault(re.sub(r"\d+", "#", name), []).append(name)
    excused = {}
    for group in twins.values():
        if len(group) == REACH_LAYERS and group[1] not in dead:
            excused.update({end: group[1] for end in (group[0], group[-1]) if end in dead})
    return excused


def stateless(subject, mech, device, with_backward: bool, cause: tuple[str, ...] = ()) -> None:
    """stack(h) on h, on another hidden, on h again, at the init as shipped (float32, the default dtype); the other
    hidden on a fresh stack built alike too."""
    if with_backward:
        require_gradient(subject, mech)
    (stack, _, own), (fresh, _, fresh_own) = built_twice(lambda: built(subject, mech, torch.float32, device))
    cotangent = hidden(SEED + 3, torch.float32, device)

    def call_on(seed, stack=stack, own=own):
        h = hidden(seed, torch.float32, device).requires_grad_(with_backward)

        def call():
            with torch.enable_grad():
                out = stack(h)
                if not with_backward:
                    return {"output": out}
                leaves = [h, *own.values()]
                grads = torch.autograd.grad((out * cotangent).sum(), leaves, allow_unused=True)
            return {"output": out, **{f"d {name}": torch.zeros_like(leaf) if gr is None else gr
                                      for name, gr, leaf in zip(["h", *own], grads, leaves)}}
        return call

    assert_stateless(call_on(SEED + 2), call_on(SEED + 4), fresh_other=call_on(SEED + 4, fresh, fresh_own),
                     modules={"stack": stack}, implementation=subject.modules.get(mech, ()),
                     kept=declared_kept_state(subject, mech), cause=cause,
                     what=f"one stack ({'with' if with_backward else 'without'} a backward)")


REFUSAL_CASES = ("no_body", "width_0", "width_1_runs")


def refusals(subject, mech, device, case: str) -> None:
    """no_body: factory(D, []) raises ValueError (no layer to connect); width_0: factory(0, bodies) raises ValueError
    (no stream width), not asked of a package that reads its width off the hidden (stream_layout.require_width_taken);
    width_1_runs, a valid edge case in its own instance (a package that cannot run it loses that case alone):
    factory(1, one body) builds and maps a hidden [2, 1] to a hidden [2, 1]."""
    factory = subject.get(mech)
    if case == "width_1_runs":
        try:
            narrow = factory(1, [torch.nn.Tanh()], dtype=torch.float64, device=device)
        except ValueError as exc:
            readings.record(1)
            raise AssertionError(f"a stack of width 1 is valid, refused with ValueError: {exc}") from None
        out = narrow(torch.ones(2, 1, dtype=torch.float64, device=device))
        readings.record(0 if out.shape == (2, 1) else 1)
        assert out.shape == (2, 1), f"a stack of width 1 returned shape {tuple(out.shape)} for a hidden [2, 1]"
        return
    if case == "width_0":
        require_width_taken(subject, mech)
    d, layer_bodies = (D, []) if case == "no_body" else (0, bodies(torch.float64, device))
    try:
        factory(d, layer_bodies, dtype=torch.float64, device=device)
        built_anyway = 1
    except ValueError:
        built_anyway = 0
    readings.record(built_anyway)  # a case the interface refuses that was built (0 passes)
    assert not built_anyway, f"built instead of refused with ValueError: {case.replace('_', ' ')}"


def default_dtype(subject, mech, device) -> None:
    """factory(D, bodies) with no dtype: every parameter of the stack is float32, the interface's default."""
    stack, _, own = built(subject, mech, None, device)
    other = {name: str(p.dtype).removeprefix("torch.") for name, p in own.items() if p.dtype != torch.float32}
    readings.record(len(other))  # parameters of another dtype (0 passes)
    assert not other, f"built with no dtype, the stack holds parameters that are not float32: {other}"
