"""fakepkg: a tiny optimal-transport package the fidelity project has never seen.

Its own API, not fidelity's: `balance(scores, iters, first=...)` alternately normalises the
columns and rows of the matrix exp(scores), in the log domain, and returns the matrix;
`balance_fast` is a fixed-size fast path; `balance(..., accumulate="float64")` accumulates in
double and returns double. Nothing here knows fidelity.
"""
from __future__ import annotations

import torch

__all__ = ["balance", "balance_fast"]

FAST_MAX_N = 4


def balance(scores: torch.Tensor, iters: int, *, first: str = "rows", accumulate: str | None = None) -> torch.Tensor:
    """Alternately normalise the columns and rows of exp(scores) [..., n, n], `iters` rounds.

    first="columns": each round normalises the columns, then the rows; first="rows" the other
    way round. Log domain throughout (a normalisation is s - logsumexp(s)), so nothing under-
    or overflows. accumulate="float64" computes (and returns) float64.
    """
    if scores.dim() < 2 or scores.shape[-1] != scores.shape[-2]:
        raise ValueError(f"fakepkg.balance wants square matrices [..., n, n], got {tuple(scores.shape)}")
    if iters < 0:
        raise ValueError(f"fakepkg.balance: iters must be >= 0, got {iters}")
    if first not in ("rows", "columns"):
        raise ValueError(f"fakepkg.balance: first must be 'rows' or 'columns', got {first!r}")
    s = scores.to(torch.float64) if accumulate == "float64" else scores
    axes = (-2, -1) if first == "columns" else (-1, -2)
    for _ in range(iters):
        for axis in axes:
            s = s - torch.logsumexp(s, dim=axis, keepdim=True)
    return torch.exp(s)


def balance_fast(scores: torch.Tensor, iters: int) -> torch.Tensor:
    """The fast path: columns first, for matrices up to FAST_MAX_N x FAST_MAX_N only."""
    if scores.shape[-1] > FAST_MAX_N:
        raise ValueError(f"fakepkg.balance_fast supports n <= {FAST_MAX_N}, got n = {scores.shape[-1]}")
    return balance(scores, iters, first="columns")
