"""npbalance: a forward-only optimal-transport package in NumPy that the fidelity project has never seen.

Its own API, not fidelity's: `scale(scores, rounds)` alternately normalises the columns, then the
rows, of exp(scores) [..., n, n], in the log domain and in the array's own dtype, and returns the
matrix. NumPy has no gradient: nothing here is differentiable. `scale_warm` is the package's "fast"
path: it starts each call from the log-scalings the previous call on that shape and dtype ended with, and
never resets them. Nothing here knows fidelity.
"""
from __future__ import annotations

import numpy as np

__all__ = ["scale", "scale_warm"]

_WARM: dict[tuple, np.ndarray] = {}  # (shape, dtype) -> the log column scalings the last call ended with


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, np.zeros_like(top))
    return top + np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True))


def _checked(scores: np.ndarray, rounds: int) -> None:
    if scores.ndim < 2 or scores.shape[-1] != scores.shape[-2]:
        raise ValueError(f"npbalance wants square matrices [..., n, n], got {scores.shape}")
    if rounds < 0:
        raise ValueError(f"npbalance: rounds must be >= 0, got {rounds}")


def scale(scores: np.ndarray, rounds: int) -> np.ndarray:
    """exp(scores) with `rounds` column-then-row normalisations."""
    _checked(scores, rounds)
    s = scores
    for _ in range(rounds):
        s = s - _logsumexp(s, axis=-2)  # every column sums to 1
        s = s - _logsumexp(s, axis=-1)  # then every row
    return np.exp(s)


def scale_warm(scores: np.ndarray, rounds: int) -> np.ndarray:
    """As `scale`, but starting from the previous call's column scalings on the same shape."""
    _checked(scores, rounds)
    s = scores + _WARM.get((scores.shape, scores.dtype), np.zeros(scores.shape[:-2] + (1, scores.shape[-1]), scores.dtype))
    for _ in range(rounds):
        s = s - _logsumexp(s, axis=-2)
        s = s - _logsumexp(s, axis=-1)
    _WARM[scores.shape, scores.dtype] = (s - scores).mean(axis=-2, keepdims=True).astype(scores.dtype)
    return np.exp(s)
