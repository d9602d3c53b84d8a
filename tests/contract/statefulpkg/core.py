"""Sinkhorn-Knopp objects that keep state: an iteration budget, and a diagnostics buffer."""
from __future__ import annotations

import torch


def _normalised(logits: torch.Tensor, iterations: int) -> torch.Tensor:
    log_m = logits
    for _ in range(iterations):
        log_m = log_m - torch.logsumexp(log_m, dim=-2, keepdim=True)
        log_m = log_m - torch.logsumexp(log_m, dim=-1, keepdim=True)
    return log_m.exp()


class SinkhornProjection:
    """exp(logits) made doubly stochastic by `iterations` column-then-row normalisations.

    The object's budget is `budget` iterations in all (counted in `total_iterations`, never reset); past
    it, each call runs a single iteration."""

    budget = 1000

    def __init__(self) -> None:
        self.total_iterations = 0

    def __call__(self, logits: torch.Tensor, iterations: int = 20) -> torch.Tensor:
        if logits.dim() < 2 or logits.shape[-1] != logits.shape[-2]:
            raise ValueError(f"statefulpkg: logits must be [..., n, n], got {tuple(logits.shape)}")
        if iterations < 0:
            raise ValueError(f"statefulpkg: iterations must be >= 0, got {iterations}")
        steps = iterations if self.total_iterations < self.budget else min(iterations, 1)
        self.total_iterations += steps
        return _normalised(logits, steps)


class WorkspaceSinkhorn:
    """exp(logits) made doubly stochastic by `iterations` column-then-row normalisations; the column sums of
    each result are written into a buffer kept per (shape, dtype, device), for a caller's diagnostics."""

    def __init__(self) -> None:
        self._workspace: dict[tuple, torch.Tensor] = {}

    def __call__(self, logits: torch.Tensor, iterations: int = 20) -> torch.Tensor:
        if logits.dim() < 2 or logits.shape[-1] != logits.shape[-2]:
            raise ValueError(f"statefulpkg: logits must be [..., n, n], got {tuple(logits.shape)}")
        if iterations < 0:
            raise ValueError(f"statefulpkg: iterations must be >= 0, got {iterations}")
        out = _normalised(logits, iterations)
        key = (tuple(logits.shape), logits.dtype, str(logits.device))
        if key not in self._workspace:
            self._workspace[key] = torch.empty(logits.shape[:-2] + logits.shape[-1:], dtype=logits.dtype,
                                               device=logits.device)
        torch.sum(out.detach(), dim=-2, out=self._workspace[key])
        return out
