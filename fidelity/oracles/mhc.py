"""mHC (arXiv:2512.24880): Eq. 3 in both stream layouts, Eq. 7/8 coefficients, the parameter count.

Eq. 8: H_pre = sigma(H~pre), H_post = 2 sigma(H~post), H_res = Sinkhorn(H~res) (Eq. 9).
With alpha = 0 (dynamic part off) H~ = b, so the static biases alone fix every coefficient.

Eq. 3, two layouts (x has one row per stream):
- "paper": streams are n copies-in-spirit of a C-vector; the layer input is
  u = H_pre x = sum_i H_pre[i] x[i] (a C-vector), the layer output F is ONE
  C-vector, and out[j] = sum_i H_res[j,i] x[i] + H_post[j] F.
- "sliced" (source 004's): a D-vector cut into n slices of C; the body
  returns one output per stream y[j], H_pre is not wired, and
  out[j,c] = sum_i H_res[j,i] x[i,c] + H_post[j] y[j,c].

Eq. 7 (no tanh): vec x flattened row-major to nC, x' = RMSNorm(vec x) with
eps inside the root and no gain (the paper absorbs it into phi),
H~pre = alpha_pre (x' phi_pre) + b_pre, H~post likewise, H~res =
alpha_res mat(x' phi_res) + b_res with mat(.) the row-major n x n reshape.

Arithmetic here is generic: it runs on sympy values (exact) or on mpf
(inside `precision()`); H_res comes from `sinkhorn.sinkhorn` (mpmath).
"""
from __future__ import annotations

from typing import Sequence

import mpmath
import sympy

from . import sinkhorn as sk
from ._precision import at_dps, exact, guarded, mp, precision
from .rmsnorm import rmsnorm


def sigmoid(x) -> sympy.Expr:
    """1 / (1 + e^-x), exact."""
    return 1 / (1 + sympy.exp(-exact(x)))


def h_pre(b_pre: Sequence) -> list[sympy.Expr]:
    """Eq. 8: H_pre = sigma(H~pre)."""
    return [sigmoid(v) for v in b_pre]


def h_post(b_post: Sequence) -> list[sympy.Expr]:
    """Eq. 8: H_post = 2 sigma(H~post)."""
    return [2 * sigmoid(v) for v in b_post]


def h_res(b_res: Sequence[Sequence], t_max: int | None = None) -> list[list[mpmath.mpf]]:
    """Eq. 8/9: H_res = Sinkhorn-Knopp(H~res), M(t_max) in mpmath."""
    return sk.sinkhorn(b_res, t_max)


def eq3_sliced(x: Sequence[Sequence], y: Sequence[Sequence], H_res, H_post) -> list[list]:
    """out[j][c] = sum_i H_res[j][i] x[i][c] + H_post[j] y[j][c] (per-stream body outputs y)."""
    n, C = len(x), len(x[0])
    return [[sum(H_res[j][i] * x[i][c] for i in range(n)) + H_post[j] * y[j][c] for c in range(C)]
            for j in range(n)]


def eq3_paper(x: Sequence[Sequence], F: Sequence, H_pre, H_res, H_post) -> dict:
    """Layer input u[c] = sum_i H_pre[i] x[i][c]; out[j][c] = sum_i H_res[j][i] x[i][c] + H_post[j] F[c].

    F is the layer's output on u, GIVEN (not computed from u), so the fixture checks the residual alone.
    """
    n, C = len(x), len(x[0])
    u = [sum(H_pre[i] * x[i][c] for i in range(n)) for c in range(C)]
    out = [[sum(H_res[j][i] * x[i][c] for i in range(n)) + H_post[j] * F[c] for c in range(C)] for j in range(n)]
    return {"u": u, "out": out}


def eq7_coefficients(x: Sequence[Sequence], phi_pre, phi_post, phi_res, alpha_pre, alpha_post, alpha_res,
                     b_pre, b_post, b_res, eps, t_max: int | None = None) -> dict:
    """Eq. 7 then Eq. 8 for one token: x is n x C; phi_pre/phi_post are nC x n, phi_res nC x n^2.

    Returns exact sympy x' (normed), H~pre, H~post, H~res, H_pre, H_post, and H_res (mpmath, Sinkhorn M(t_max)).
    """
    n = len(x)
    flat = [exact(v) for row in x for v in row]
    xn = rmsnorm(flat, eps)
    D = len(flat)

    def proj(phi, k):
        if len(phi) != D or any(len(r) != k for r in phi):
            raise ValueError(f"phi must be {D} x {k}")
        return [sum(xn[r] * exact(phi[r][c]) for r in range(D)) for c in range(k)]

    t_pre = [exact(alpha_pre) * v + exact(b) for v, b in zip(proj(phi_pre, n), b_pre)]
    t_post = [exact(alpha_post) * v + exact(b) for v, b in zip(proj(phi_post, n), b_post)]
    flat_res = proj(phi_res, n * n)
    t_res = [[exact(alpha_res) * flat_res[i * n + j] + exact(b_res[i][j]) for j in range(n)] for i in range(n)]
    return {
        "x_normed": xn,
        "H_pre_tilde": t_pre,
        "H_post_tilde": t_post,
        "H_res_tilde": t_res,
        "H_pre": [sigmoid(v) for v in t_pre],
        "H_post": [2 * sigmoid(v) for v in t_post],
        "H_res": sk.sinkhorn(t_res, t_max),
    }


def eq7_coefficients_mp(x, params: dict, eps, t_max: int | None = None) -> dict:
    """`eq7_coefficients`' H_pre, H_post, H_res as `mp` gives them (DPS digits), ~50x faster: Eq. 7/8 in mpmath at
    GUARD_DPS, each value rounded to DPS, and H_res Sinkhorn at DPS from the rounded H~res, as `sinkhorn` runs it.

    x: n rows of C (mpf or exact); params: the nine parameters by name (as `residual_mpf` reads them)."""
    with guarded():
        xs = [[mp(v) for v in row] for row in x]
        ps = {k: to_mp_nested(v) for k, v in params.items()}
        _, t_pre, t_post, t_res = _eq7_tilde_mpf(xs, ps, mp(eps))
        H_pre = at_dps([sigmoid_mpf(v) for v in t_pre])
        H_post = at_dps([2 * sigmoid_mpf(v) for v in t_post])
        t_res = at_dps(t_res)
    with precision():
        return {"H_pre": H_pre, "H_post": H_post, "H_res": sk.sinkhorn_mpf(t_res, t_max)}


def param_shapes(D: int, n: int) -> dict[str, tuple[int, ...]]:
    """The mHC block's parameters and their shapes (D = the flattened width nC the hyper-network reads)."""
    return {
        "phi_pre": (D, n),
        "phi_post": (D, n),
        "phi_res": (D, n * n),
        "alpha_pre": (),
        "alpha_post": (),
        "alpha_res": (),
        "b_pre": (n,),
        "b_post": (n,),
        "b_res": (n, n),
    }


def param_count(D: int, n: int, names: Sequence[str] | None = None) -> int:
    """Sum of the element counts of the shape table (optionally of the named parameters only)."""
    shapes = param_shapes(D, n)
    total = 0
    for name in (shapes if names is None else names):
        size = 1
        for s in shapes[name]:
            size *= s
        total += size
    return total


def param_formula(D: int, n: int) -> int:
    """The closed form 2Dn + Dn^2 + 2n + n^2 + 3 (compared against `param_count` in the tests)."""
    return 2 * D * n + D * n * n + 2 * n + n * n + 3


def to_mp_nested(value):
    """Nested sympy/mpf values as mpf (call inside `precision()`)."""
    if isinstance(value, (list, tuple)):
        return [to_mp_nested(v) for v in value]
    return mp(value)


def eq3_sliced_mp(x, y, b_post, b_res, t_max: int | None = None) -> dict:
    """The alpha = 0 sliced-layout fixture end to end in mpmath: H_post, H_res, out."""
    with precision():
        hp = to_mp_nested(h_post(b_post))
        hr = h_res(b_res, t_max)
        out = eq3_sliced(to_mp_nested(x), to_mp_nested(y), hr, hp)
        return {"H_post": hp, "H_res": hr, "out": out}


def sigmoid_mpf(v: mpmath.mpf) -> mpmath.mpf:
    """1 / (1 + e^-v) on an mpf, at the caller's precision."""
    return 1 / (1 + mpmath.exp(-v))


def residual_mpf(x, params: dict, W, eps, t_max: int | None = None, layout: str = "paper") -> dict:
    """Eqs. 7, 8 and 3 for one token with a LINEAR layer body F(v) = W v, on mpf values at the caller's precision.

    x is n rows of C; params holds the nine parameters by name (phi_pre / phi_post [nC][n],
    phi_res [nC][n^2] with mat() row-major, alpha_* scalars, b_pre / b_post [n], b_res [n][n]);
    W is C x C ("paper": F runs on u = H_pre x = sum_i H_pre[i] x[i]) or nC x nC ("sliced": F runs
    on the whole hidden vec x, its output read as n slices y[j] of C; H_pre is computed, not read).
    out[j][c] = sum_i H_res[j][i] x[i][c] + H_post[j] y_j[c], y_j = F (paper) or the slice j (sliced).
    No `precision()` inside: fidelity.oracles.derivatives differentiates this at more digits than DPS.
    Returns {"x_normed", "H_pre", "H_post", "H_res", "F" (the body's output), "out"}.
    """
    if layout not in ("paper", "sliced"):
        raise ValueError(f"unknown layout {layout!r}")
    n, C = len(x), len(x[0])
    flat = [v for row in x for v in row]
    D = n * C
    xn, t_pre, t_post, t_res = _eq7_tilde_mpf(x, params, eps)
    H_pre = [sigmoid_mpf(v) for v in t_pre]  # mhc.eq8
    H_post = [2 * sigmoid_mpf(v) for v in t_post]
    H_res = sk.sinkhorn_mpf(t_res, t_max)
    if layout == "paper":
        u = [mpmath.fsum(H_pre[i] * x[i][c] for i in range(n)) for c in range(C)]
        F = [mpmath.fsum(W[a][b] * u[b] for b in range(C)) for a in range(C)]
        y = [F for _ in range(n)]
    else:
        F = [mpmath.fsum(W[a][b] * flat[b] for b in range(D)) for a in range(D)]
        y = [F[j * C:(j + 1) * C] for j in range(n)]
    out = [[mpmath.fsum(H_res[j][i] * x[i][c] for i in range(n)) + H_post[j] * y[j][c] for c in range(C)]
           for j in range(n)]
    return {"x_normed": xn, "H_pre": H_pre, "H_post": H_post, "H_res": H_res, "F": F, "out": out}


def _eq7_tilde_mpf(x, params: dict, eps) -> tuple[list, list, list, list[list]]:
    """Eq. 7 on mpf at the caller's precision: x' (vec x RMS-normed over nC), H~pre, H~post, H~res."""
    n, C = len(x), len(x[0])
    flat = [v for row in x for v in row]
    D = n * C
    r = mpmath.sqrt(mpmath.fsum(v * v for v in flat) / D + eps)  # mhc.eq7: RMSNorm over nC, eps inside the root
    xn = [v / r for v in flat]

    def proj(name, k):
        phi = params[name]
        if len(phi) != D or any(len(row) != k for row in phi):
            raise ValueError(f"{name} must be {D} x {k}")
        return [mpmath.fsum(xn[i] * phi[i][c] for i in range(D)) for c in range(k)]

    t_pre = [params["alpha_pre"] * v + b for v, b in zip(proj("phi_pre", n), params["b_pre"])]
    t_post = [params["alpha_post"] * v + b for v, b in zip(proj("phi_post", n), params["b_post"])]
    flat_res = proj("phi_res", n * n)
    t_res = [[params["alpha_res"] * flat_res[i * n + j] + params["b_res"][i][j] for j in range(n)] for i in range(n)]
    return xn, t_pre, t_post, t_res
