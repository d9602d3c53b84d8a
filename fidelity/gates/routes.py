"""A subject's function mechanism bound to the gradient route a gate instance asks for.

Gates are parametrised over the routes (fidelity.mechanisms.ROUTES): a route may carry its own
forward (a fused kernel), so even a forward gate runs once per route. A forward-only subject
(Capability backward=("none",)) has one forward and no route: a forward gate's "autograd"
instance calls it without `backward=`, its "manual" instance is not run (the same forward would
be counted twice), and a gradient gate does not run on it. A module factory with a route keyword
(block_attnres) is routed the same way; any gate states a gradient by its class
(gate_classes.GRADIENT: not run from collection on) or by `require_gradient` in the instance that
takes one. This file is the one home of that rule and of the reasons the skipped instances give.
"""
from __future__ import annotations

import functools
from typing import Callable

import pytest

from fidelity.mechanisms.capability import FORWARD_ONLY

FORWARD_INSTANCE = "autograd"
"""The route instance of a forward gate in which a forward-only subject's one forward runs."""


def routed(subject, mechanism: str, backward: str, *, gradient: bool, keyword: str = "backward") -> Callable:
    """`subject`'s `mechanism`, called with `backward=` bound (without it for a forward-only subject).

    gradient  whether the gate takes a gradient through the call (a forward-only subject has none)
    keyword   the name the interface gives the route (mhc_residual's factory: "sinkhorn_backward")

    Skips the instance, with the reason, where the subject cannot drive it.
    """
    fn = subject.get(mechanism)
    if not is_forward_only(subject, mechanism):
        if backward not in subject.capabilities[mechanism].routes:
            pytest.skip(f"subject {subject.name} has no {backward!r} backward route for {mechanism}")
        return functools.partial(fn, **{keyword: backward})
    if gradient:
        require_gradient(subject, mechanism)
    if backward != FORWARD_INSTANCE:
        pytest.skip(f"subject {subject.name} is forward-only for {mechanism}: its one forward runs in the "
                    f"{FORWARD_INSTANCE!r} instance of this gate")
    return fn


def forward_only_reason(subject_name: str, mechanism: str) -> str:
    """Why a gate instance that takes a gradient is not run on a forward-only subject."""
    return (f"subject {subject_name} is forward-only for {mechanism} (backward={FORWARD_ONLY}): "
            "a gate that takes a gradient does not apply")


def is_forward_only(subject, mechanism: str) -> bool:
    return not subject.capabilities[mechanism].routes


def require_gradient(subject, mechanism: str) -> None:
    """In a gate instance that takes a gradient through `subject`'s `mechanism` (a module's backward):
    skip it, with the reason, when the subject is forward-only. A gate whose class takes a gradient
    (gate_classes.GRADIENT) needs no call: its instances are marked not run at collection."""
    if is_forward_only(subject, mechanism):
        pytest.skip(forward_only_reason(subject.name, mechanism))
