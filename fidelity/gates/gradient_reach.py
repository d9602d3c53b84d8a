"""Gradient reach: every tensor a module's output depends on receives a gradient that matters.

A detached path, a parameter read through .data, or a parameter the forward never uses gets a
gradient of None or exactly zero; a parameter whose contribution cancels, or is scaled to nothing,
gets one of rounding size (e.g. 1e-30 against O(1) for the others). A reach gate names each such
tensor as dead, with its max |grad| beside the largest others'. The cotangent is a seeded normal
draw on every output element, so no output is left out and no cancellation is arranged by the gate.

Negligible is relative to the largest gradient among the tensors the gate asks about, in the dtype
the gradients were computed in: a gradient at most ROUNDING_EPS x eps of the largest is within the
rounding error of a backward (see ROUNDING_EPS). A tensor asked about alone is dead only at zero.
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from fidelity.gates.compare import assert_bound
from fidelity.gates.tensors import floating_tensors

ROUNDING_EPS = 32
"""A gradient entry the true derivative makes zero is computed as a sum of rounded terms, each at most the size
of the largest gradient. Rounding errors of n operations grow like sqrt(n) eps (Higham and Mary 2019, the
probabilistic form of the gamma_n = n eps bound); the gates' graphs round fewer than 2^10 times along a path (a
20-sweep Sinkhorn in a 3-layer stack is about 300), so 32 eps of the largest is where rounding ends:
7.1e-15 in float64, 3.8e-6 in float32. Measured on this repository's subjects, an exact cancellation rounds
to at most 0.23 eps of the largest (mHC's first- and last-layer H_res in a stack: 1e-18..4e-17 relative in
float64, 5e-11..3e-8 in float32), 140x below the floor; the smallest live gradient a reach gate here reads is
3.2e-3 of the largest in float32 (HC's layer_norm.weight in the loop) and 4.3e-4 in float64 (the middle H_res of
the mHC stack), 800x and 6e10x above. The worst-case n eps (1.2e-4 in float32) would sit within 30x of a live
float32 gradient, so it is not used."""


def negligible_fraction(dtype: torch.dtype) -> float:
    """The fraction of the largest gradient at or below which a gradient in `dtype` is dead."""
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"a reach gate reads gradients in float32 or float64, not {dtype}: below float32 the "
                         "rounding floor (32 eps) is no longer far below a live gradient; run it in float32")
    return ROUNDING_EPS * torch.finfo(dtype).eps


def gradient_magnitudes(forward: Callable[[], object], tensors: Mapping[str, torch.Tensor], *,
                        seed: int = 0) -> dict[str, float]:
    """max |grad| of each named leaf (requires_grad) after one backward of a seeded cotangent; None reads 0."""
    for name, t in tensors.items():
        if not t.requires_grad:
            raise ValueError(f"{name!r} does not require grad; a reach gate asks about leaves that do")
        t.grad = None
    outputs = [o for o in floating_tensors(forward()) if o.requires_grad]
    g = torch.Generator().manual_seed(seed)
    loss = sum((o * torch.randn(o.shape, generator=g, dtype=torch.float64).to(o.device, o.dtype)).sum()
               for o in outputs)
    if outputs:
        loss.backward()
    return {name: 0.0 if t.grad is None else float(t.grad.detach().abs().max()) for name, t in tensors.items()}


def _coarsest(tensors: Mapping[str, torch.Tensor]) -> torch.dtype:
    return max((t.dtype for t in tensors.values()), key=lambda d: torch.finfo(d).eps, default=torch.float64)


def dead_among(magnitudes: Mapping[str, float], dtype: torch.dtype) -> list[str]:
    """Names whose max |grad| is 0, or at most negligible_fraction(dtype) of the largest of the others asked about."""
    floor = negligible_fraction(dtype) * max(magnitudes.values(), default=0.0)
    return [name for name, m in magnitudes.items() if m == 0 or m <= floor]


def dead_gradients(forward: Callable[[], object], tensors: Mapping[str, torch.Tensor], *, seed: int = 0) -> list[str]:
    """Names in `tensors` (leaves with requires_grad) whose gradient from one backward of forward() is None,
    zero, or negligible against the largest of theirs (dead_among)."""
    return dead_among(gradient_magnitudes(forward, tensors, seed=seed), _coarsest(tensors))


def describe_dead(magnitudes: Mapping[str, float], dead: list[str], dtype: torch.dtype, *, shown: int = 3) -> str:
    """Each dead tensor with its max |grad|, beside the largest live ones' and the floor."""
    live = sorted((n for n in magnitudes if n not in dead), key=lambda n: -magnitudes[n])
    named = ", ".join(f"{n!r} {magnitudes[n]:.3g}" for n in dead)
    others = ", ".join(f"{n!r} {magnitudes[n]:.3g}" for n in live[:shown]) or "none"
    return (f"dead (max |grad| 0 or at most {ROUNDING_EPS} eps = {negligible_fraction(dtype):.3g} of the largest, "
            f"{str(dtype).removeprefix('torch.')}): {named}; the largest others: {others}")


def assert_gradients_reach(forward: Callable[[], object], tensors: Mapping[str, torch.Tensor], *, what: str,
                           seed: int = 0) -> int:
    """Every named tensor gets a gradient that matters; the reading `dead_gradients` counts those that do not.

    `forward` computes the output from `tensors` (name -> leaf with requires_grad: the inputs and the module's
    parameters, e.g. dict(module.named_parameters())); `seed` seeds the cotangent.

    >>> import torch
    >>> from fidelity.gates.gradient_reach import assert_gradients_reach
    >>> linear = torch.nn.Linear(3, 2, dtype=torch.float64)
    >>> x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    >>> assert_gradients_reach(lambda: linear(x), {"x": x, **dict(linear.named_parameters())}, what="linear")
    0.0
    >>> detached = lambda: torch.nn.functional.linear(x, linear.weight.detach(), linear.bias)
    >>> assert_gradients_reach(detached, {"x": x, **dict(linear.named_parameters())}, what="a detached weight")
    Traceback (most recent call last):
    ...
    fidelity.gates.compare.GateFailure: a detached weight: dead (max |grad| 0 or at most 32 eps = 7.11e-15 of the largest, float64): 'weight' 0; ... reading=1
    """
    dtype = _coarsest(tensors)
    magnitudes = gradient_magnitudes(forward, tensors, seed=seed)
    dead = dead_among(magnitudes, dtype)
    return assert_bound(len(dead), at_most=0, reading_name="dead_gradients",
                        what=f"{what}: {describe_dead(magnitudes, dead, dtype)}")
