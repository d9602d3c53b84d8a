"""RMSNorm, mean form: y = x / sqrt(mean(x^2) + eps) * g (Zhang & Sennrich 2019; g defaults to ones).

The paper's own formula has no eps; eps inside the root is the usual
implementation (and ours, tier c). Exact (sympy) for exact inputs.
"""
from __future__ import annotations

from typing import Sequence

import sympy

from ._precision import exact


def rms(x: Sequence, eps=0) -> sympy.Expr:
    """sqrt(mean(x^2) + eps)."""
    xs = [exact(v) for v in x]
    if not xs:
        raise ValueError("RMS of an empty vector")
    return sympy.sqrt(sum(v**2 for v in xs) / len(xs) + exact(eps))


def rmsnorm(x: Sequence, eps=0, g: Sequence | None = None) -> list[sympy.Expr]:
    """x / sqrt(mean(x^2) + eps) * g, element by element."""
    xs = [exact(v) for v in x]
    gs = [sympy.Integer(1)] * len(xs) if g is None else [exact(v) for v in g]
    if len(gs) != len(xs):
        raise ValueError(f"gain has {len(gs)} entries, x has {len(xs)}")
    r = rms(xs, eps)
    return [v / r * gi for v, gi in zip(xs, gs)]
