"""Gradient reach: every tensor a module's output depends on receives a non-zero gradient.

A detached path, a parameter read through .data, or a parameter the forward never uses gets a
gradient of None or exactly zero; a reach gate names each such tensor. The cotangent is a
seeded normal draw on every output element, so no output is left out and no cancellation is
arranged by the gate.
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from fidelity.gates.compare import assert_bound
from fidelity.gates.tensors import floating_tensors


def dead_gradients(forward: Callable[[], object], tensors: Mapping[str, torch.Tensor], *, seed: int = 0) -> list[str]:
    """Names in `tensors` (leaves with requires_grad) whose gradient from one backward of forward() is None or 0."""
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
    return [name for name, t in tensors.items() if t.grad is None or not bool(torch.any(t.grad != 0))]


def assert_gradients_reach(forward: Callable[[], object], tensors: Mapping[str, torch.Tensor], *, what: str,
                           seed: int = 0) -> int:
    """Every named tensor gets a non-zero gradient; the reading `dead_gradients` counts those that do not."""
    dead = dead_gradients(forward, tensors, seed=seed)
    return assert_bound(len(dead), at_most=0, reading_name="dead_gradients",
                        what=f"{what}: tensors with no gradient or an all-zero one: {dead}")
