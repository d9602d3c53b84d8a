"""High-precision derivatives of the mpmath oracles: Jacobians at far more digits than a fixture stores.

`jacobian(f, point)` takes central differences of a function of a flat list of mpf at
`JACOBIAN_DPS` = 120 working digits with step h = 1e-40: the truncation error is
h^2 |f'''| / 6 ~ 1e-80 |f'''| and the rounding error 10^-120 |f| / h ~ 1e-80 |f|, so for the
smooth, O(1)-scaled oracles here (Sinkhorn, the mHC residual) every entry is good to ~70
digits, far past the 40 a fixture keeps (tests/oracles/test_oracle_derivatives.py checks it
against closed forms and against a second step size). The function must compute at the
caller's precision (no `precision()` inside it, which would cut the digits back to DPS):
fidelity.oracles.sinkhorn.sinkhorn_mpf and fidelity.oracles.mhc.residual_mpf do.

An oracle that sets its own `precision()` (Block AttnRes, the loop model: they compose oracles that
do) is differentiated at DPS = 60 digits with `jacobian_at_dps`: step 1e-20, truncation
h^2 |f'''| / 6 ~ 1e-40 and rounding 10^-60 |f| / h ~ 1e-40, so ~38 good digits: still 22 past what a
float64 gate can resolve (tests/oracles/test_oracle_derivatives.py checks that claim too).
"""
from __future__ import annotations

from typing import Callable, Sequence

import mpmath

from ._precision import DPS, mp

JACOBIAN_DPS = 120
"""Working digits of a Jacobian (the fixtures keep 40)."""

JACOBIAN_STEP = "1e-40"
"""Central-difference step at JACOBIAN_DPS: truncation and rounding both ~1e-80."""

DPS_STEP = "1e-20"
"""Central-difference step for an oracle that computes at DPS (60) digits: truncation and rounding ~1e-40."""


def flatten(nested) -> list:
    """The leaves of nested lists, row-major."""
    if isinstance(nested, (list, tuple)):
        return [leaf for item in nested for leaf in flatten(item)]
    return [nested]


def shape_of(nested) -> tuple[int, ...]:
    """The shape of a rectangular nested list (() for a leaf)."""
    if isinstance(nested, (list, tuple)):
        return (len(nested),) + (shape_of(nested[0]) if nested else ())
    return ()


def unflatten(flat: Sequence, shape: Sequence[int]):
    """flat (row-major) reshaped to nested lists of `shape`; a leaf for shape ()."""
    if not shape:
        if len(flat) != 1:
            raise ValueError(f"{len(flat)} values for a scalar")
        return flat[0]
    size = 1
    for s in shape[1:]:
        size *= s
    if len(flat) != shape[0] * size:
        raise ValueError(f"{len(flat)} values do not fill shape {tuple(shape)}")
    return [unflatten(flat[k * size:(k + 1) * size], shape[1:]) for k in range(shape[0])]


def jacobian(f: Callable[[list], list], point: Sequence, *, dps: int = JACOBIAN_DPS,
             step: str = JACOBIAN_STEP) -> list[list[mpmath.mpf]]:
    """J[k][i] = d f(point)[k] / d point[i], central differences at `dps` digits.

    `point` holds exact values (sympy, ints, decimal strings) or mpf; they are read at `dps`.
    `f` maps a flat list of mpf to a flat list of mpf, computing at the caller's precision.
    Returns mpf at `dps` digits (round with fidelity.oracles._precision.digits)."""
    with mpmath.workdps(dps):
        x = [mp(v) for v in point]
        h = mpmath.mpf(step)
        columns = []
        for i in range(len(x)):
            up, down = list(x), list(x)
            up[i] += h
            down[i] -= h
            fu, fd = f(up), f(down)
            if len(fu) != len(fd):
                raise ValueError("f returned outputs of different lengths")
            columns.append([(a - b) / (2 * h) for a, b in zip(fu, fd)])
        return [[columns[i][k] for i in range(len(x))] for k in range(len(columns[0]) if columns else 0)]


def jacobian_at_dps(f: Callable[[list], list], point: Sequence) -> list[list[mpmath.mpf]]:
    """`jacobian` of an oracle that runs inside its own `precision()` (DPS digits): ~38 good digits."""
    return jacobian(f, point, dps=DPS, step=DPS_STEP)


def value_at(f: Callable[[list], list], point: Sequence, *, dps: int = JACOBIAN_DPS) -> list[mpmath.mpf]:
    """f(point) at `dps` digits (the value whose Jacobian `jacobian` gives)."""
    with mpmath.workdps(dps):
        return f([mp(v) for v in point])
