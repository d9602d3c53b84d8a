"""Hyper-Connections (arXiv:2409.19606): static HC, the Eq. 14 init, DHC.

One layer with hyper-hidden H (n x d), B (1 x n), A_m (n x 1), A_r (n x n):
    Eq. 3  h_0^T = A_m^T H          (the layer input, a d-vector)
    Eq. 4  H'    = A_r^T H
    Eq. 5  H^    = B^T (T h_0)^T + H'
Eq. 14 init of layer k: B = 1_{1 x n}, A_m = e_{k mod n}, A_r = I, with k the 0-based
layer index (Alg. 2's `init_alpha0[layer_id % n] = 1`; the paper says only "layer index").
DHC (Eq. 10-13): Hbar = norm(H) per stream,
    B(H)   = s_beta  * tanh(Hbar W_beta)^T + B      (W_beta: d x 1)
    A_m(H) = s_alpha * tanh(Hbar W_m)      + A_m    (W_m: d x 1)
    A_r(H) = s_alpha * tanh(Hbar W_r)      + A_r    (W_r: d x n)
with scalar s_alpha, s_beta (Alg. 2). The readout sums the rows of the last H.

What holds with the Eq. 14 init and a replicated input H0 = (h, ..., h):
every stream equals the Pre-Norm residual stream r_L (r_0 = h,
r_k = r_{k-1} + T_k(r_{k-1})) after every layer, for ANY T_k, and the
row-sum readout is n r_L: n times the Pre-Norm residual, not equal to it
(a scale-invariant final norm, eps = 0, removes the factor).
`replicated_equivalence` proves it with sympy. Everything here is exact sympy.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Callable, Sequence

import sympy

from ._precision import exact


def eq14_init(n: int, k: int) -> dict:
    """Layer k's static matrices: B = ones(1, n), A_m = e_{k mod n} (n x 1), A_r = I_n."""
    A_m = sympy.zeros(n, 1)
    A_m[k % n, 0] = 1
    return {"B": sympy.ones(1, n), "A_m": A_m, "A_r": sympy.eye(n)}


def hc_layer(H: sympy.Matrix, B, A_m, A_r, T: Callable[[sympy.Matrix], sympy.Matrix]) -> dict:
    """Eq. 3-5: returns {"h0": 1 x d, "H_prime": n x d, "out": n x d}. T maps a 1 x d row to a 1 x d row."""
    H, B, A_m, A_r = (sympy.Matrix(v) for v in (H, B, A_m, A_r))
    h0 = A_m.T * H
    Hp = A_r.T * H
    t = sympy.Matrix(T(h0))
    if t.shape != h0.shape:
        raise ValueError(f"T returned shape {t.shape}, expected {h0.shape}")
    return {"h0": h0, "H_prime": Hp, "out": B.T * t + Hp}


def hc_layer_fractions(H, B, A_m, A_r, T: Callable[[list], list]) -> list[list[Fraction]]:
    """`hc_layer`'s out on Python Fractions (nested lists; T maps a list of d Fractions to d Fractions): the same
    exact rationals, without sympy's cost on the 200-bit rationals the loop model's mpf values hold."""
    n, d = len(H), len(H[0])
    h0 = [sum(A_m[s][0] * H[s][j] for s in range(n)) for j in range(d)]  # hc.eq3
    Hp = [[sum(A_r[s][i] * H[s][j] for s in range(n)) for j in range(d)] for i in range(n)]  # hc.eq4
    t = list(T(h0))
    if len(t) != d:
        raise ValueError(f"T returned {len(t)} entries, expected {d}")
    return [[B[0][i] * t[j] + Hp[i][j] for j in range(d)] for i in range(n)]  # hc.eq5


def layer_norm_rows(H: sympy.Matrix, eps, weight=None, bias=None) -> sympy.Matrix:
    """LayerNorm of each row (stream): (x - mean) / sqrt(var + eps) (HC Alg. 2, tier c for eps), the biased
    variance as torch.nn.LayerNorm; with `weight` / `bias` (d entries each) the affine map y * weight + bias
    follows (LayerNorm's elementwise_affine; None is weight 1, bias 0)."""
    H = sympy.Matrix(H)
    d = H.cols
    w = [sympy.Integer(1)] * d if weight is None else [exact(v) for v in _flat(weight)]
    b = [sympy.Integer(0)] * d if bias is None else [exact(v) for v in _flat(bias)]
    if len(w) != d or len(b) != d:
        raise ValueError(f"layer_norm_rows: weight and bias need d = {d} entries, got {len(w)} and {len(b)}")
    rows = []
    for i in range(H.rows):
        r = list(H.row(i))
        mu = sum(r) / len(r)
        var = sum((v - mu) ** 2 for v in r) / len(r)
        den = sympy.sqrt(var + exact(eps))
        rows.append([(v - mu) / den * w[j] + b[j] for j, v in enumerate(r)])
    return sympy.Matrix(rows)


def layer_norm_rows_mp(H, eps) -> list[list]:
    """`layer_norm_rows(H, eps)` (no affine) as `mp` gives it (DPS digits), ~50x faster: mpmath at GUARD_DPS,
    rounded to DPS (H: rows of mpf or exact values)."""
    import mpmath

    from ._precision import at_dps, guarded, mp

    with guarded():
        e, rows = mp(eps), []
        for r in ([mp(v) for v in row] for row in H):
            mu = mpmath.fsum(r) / len(r)
            den = mpmath.sqrt(mpmath.fsum((v - mu) ** 2 for v in r) / len(r) + e)
            rows.append([(v - mu) / den for v in r])
        return at_dps(rows)


def _flat(v) -> list:
    if isinstance(v, sympy.MatrixBase):
        return list(v)
    out = []
    for x in v:
        out.extend(_flat(x) if isinstance(x, (list, tuple, sympy.MatrixBase)) else [x])
    return out


def dhc_coefficients(H, B, A_m, A_r, W_beta, W_m, W_r, s_alpha, s_beta, eps, ln_weight=None, ln_bias=None) -> dict:
    """Eq. 10-13: the dynamic B(H), A_m(H), A_r(H) (Hbar = per-stream LayerNorm, affine by ln_weight / ln_bias
    when given)."""
    Hbar = layer_norm_rows(H, eps, ln_weight, ln_bias)
    tanh = lambda M: M.applyfunc(sympy.tanh)  # noqa: E731
    Bd = exact(s_beta) * tanh(Hbar * sympy.Matrix(W_beta)).T + sympy.Matrix(B)
    Amd = exact(s_alpha) * tanh(Hbar * sympy.Matrix(W_m)) + sympy.Matrix(A_m)
    Ard = exact(s_alpha) * tanh(Hbar * sympy.Matrix(W_r)) + sympy.Matrix(A_r)
    return {"B": Bd, "A_m": Amd, "A_r": Ard, "H_bar": Hbar}


def dhc_layer(H, B, A_m, A_r, W_beta, W_m, W_r, s_alpha, s_beta, eps, T, ln_weight=None, ln_bias=None) -> dict:
    """Eq. 9: the layer with the dynamic matrices of Eq. 11-13."""
    c = dhc_coefficients(H, B, A_m, A_r, W_beta, W_m, W_r, s_alpha, s_beta, eps, ln_weight, ln_bias)
    res = hc_layer(H, c["B"], c["A_m"], c["A_r"], T)
    res.update({"B": c["B"], "A_m": c["A_m"], "A_r": c["A_r"]})
    return res


def linear_T(W) -> Callable[[sympy.Matrix], sympy.Matrix]:
    """T(h) = h W for a row vector h (a d x d matrix W): a linear stand-in for a layer."""
    W = sympy.Matrix(W)
    return lambda h: sympy.Matrix(h) * W


def run_layers(H0, Ts: Sequence[Callable], index_shift: int = 0) -> list[sympy.Matrix]:
    """Static HC layers with the Eq. 14 init (layer k uses A_m = e_{(k + index_shift) mod n}) from any H0.

    index_shift = 0 is the init as written; a non-zero shift models an off-by-one layer index.
    Returns [H0, H1, ..., HL].
    """
    H = sympy.Matrix([[exact(v) for v in row] for row in H0])
    n = H.rows
    Hs = [H]
    for k, T in enumerate(Ts):
        init = eq14_init(n, k + index_shift)
        H = hc_layer(H, init["B"], init["A_m"], init["A_r"], T)["out"]
        Hs.append(H)
    return Hs


def run_static(h: Sequence, n: int, Ts: Sequence[Callable]) -> dict:
    """L = len(Ts) HC layers with the Eq. 14 init (0-based layer k = 0..L-1) on H0 = (h, ..., h).

    Returns the hyper-hidden after each layer, the Pre-Norm residual stream r_k
    (r_0 = h, r_k = r_{k-1} + T_k(r_{k-1})), and the row-sum readout.
    """
    h = sympy.Matrix([[exact(v) for v in h]])
    H = sympy.Matrix.vstack(*([h] * n))
    r = h
    Hs, rs = [H], [r]
    for k, T in enumerate(Ts):
        init = eq14_init(n, k)
        H = hc_layer(H, init["B"], init["A_m"], init["A_r"], T)["out"]
        r = r + sympy.Matrix(T(r))
        Hs.append(H)
        rs.append(r)
    readout = sympy.ones(1, n) * H
    return {"H": Hs, "prenorm": rs, "readout": readout}


def replicated_equivalence(n: int = 3, d: int = 2, L: int = 3) -> dict[str, dict]:
    """Prove with sympy symbols what the Eq. 14 init gives on a replicated input.

    Symbolic h (d entries) and two families of layers: linear T_k(h) = h W_k with
    symbolic W_k, and a nonlinear T_k(h)_j = g_k(h_0, ..., h_{d-1}, j) with
    undefined sympy functions g_k. Statements:
    - every_stream_is_prenorm: after each layer every row of H equals r_k;
    - readout_is_n_times_prenorm: the row-sum readout equals n r_L exactly (not r_L, for n > 1).
    """
    hs = sympy.Matrix([[sympy.Symbol(f"h{j}", real=True) for j in range(d)]])
    lin = [linear_T(sympy.Matrix(d, d, lambda i, j, k=k: sympy.Symbol(f"w{k}_{i}{j}", real=True)))
           for k in range(L)]

    def nonlinear(k):
        g = sympy.Function(f"g{k}")
        return lambda h: sympy.Matrix([[g(*list(h), j) for j in range(d)]])

    families = {"linear": lin, "nonlinear": [nonlinear(k) for k in range(L)]}
    every, readout_n, readout_not_1 = True, True, True
    for Ts in families.values():
        res = run_static(list(hs), n, Ts)
        for H, r in zip(res["H"], res["prenorm"]):
            every &= all(sympy.simplify(H.row(i) - r) == sympy.zeros(1, d) for i in range(n))
        diff = sympy.simplify(res["readout"] - n * res["prenorm"][-1])
        readout_n &= diff == sympy.zeros(1, d)
        if n > 1:
            readout_not_1 &= sympy.simplify(res["readout"] - res["prenorm"][-1]) != sympy.zeros(1, d)
    return {
        "every_stream_is_prenorm": {
            "statement": f"with the Eq. 14 init and H0 = (h, ..., h), every one of the n = {n} streams equals "
                         f"the Pre-Norm residual stream after each of L = {L} layers",
            "holds": bool(every),
            "evidence": f"sympy, symbolic h (d = {d}), symbolic linear W_k and undefined nonlinear g_k",
        },
        "readout_is_n_times_prenorm": {
            "statement": f"the row-sum readout equals n * r_L (n = {n}), not r_L",
            "holds": bool(readout_n and readout_not_1),
            "evidence": "sympy: readout - n r_L simplifies to 0 and readout - r_L does not",
        },
    }


def dhc_zero_weights_is_static(n: int = 2, d: int = 3) -> dict:
    """Prove with symbols: W_beta = W_m = W_r = 0 makes DHC's matrices equal the static ones (tanh(0) = 0)."""
    H = sympy.Matrix(n, d, lambda i, j: sympy.Symbol(f"H{i}{j}", real=True))
    B = sympy.Matrix(1, n, lambda i, j: sympy.Symbol(f"B{j}", real=True))
    A_m = sympy.Matrix(n, 1, lambda i, j: sympy.Symbol(f"am{i}", real=True))
    A_r = sympy.Matrix(n, n, lambda i, j: sympy.Symbol(f"ar{i}{j}", real=True))
    sa, sb, eps = sympy.symbols("s_alpha s_beta epsilon", positive=True)
    c = dhc_coefficients(H, B, A_m, A_r, sympy.zeros(d, 1), sympy.zeros(d, 1), sympy.zeros(d, n), sa, sb, eps)
    same = (sympy.simplify(c["B"] - B) == sympy.zeros(1, n) and sympy.simplify(c["A_m"] - A_m) == sympy.zeros(n, 1)
            and sympy.simplify(c["A_r"] - A_r) == sympy.zeros(n, n))
    return {"statement": "DHC with W_beta = W_m = W_r = 0 has B(H) = B, A_m(H) = A_m, A_r(H) = A_r for every H",
            "holds": bool(same), "evidence": f"sympy, symbolic H ({n} x {d}), B, A_m, A_r, s_alpha, s_beta, eps"}


MODULE_PARAMETERS_STATIC = ("static_beta", "static_alpha")
MODULE_PARAMETERS_DYNAMIC = MODULE_PARAMETERS_STATIC + ("dynamic_alpha_fn", "dynamic_beta_fn", "alpha_scale",
                                                        "beta_scale", "layer_norm.weight", "layer_norm.bias")
"""The parameters of the hyper_connection interface's module (fidelity.mechanisms.hyper_connection), by name."""


def module_layer(params: dict, H, T: Callable[[sympy.Matrix], sympy.Matrix], eps=None, dynamic: bool = True) -> dict:
    """One layer of the interface's module, read from its parameters by name (Alg. 2's layout), exactly.

    params: static_beta [n] (B), static_alpha [n][n+1] ([A_m | A_r]); when dynamic also dynamic_alpha_fn
    [d][n+1] ([W_m | W_r]), dynamic_beta_fn [d] (W_beta), alpha_scale, beta_scale and the LayerNorm's
    layer_norm.weight / layer_norm.bias [d] (eps given). Static: Eqs. 3-5 with B, A_m, A_r; dynamic: Eq. 9
    with Eqs. 10-13. Returns hc_layer's dict (h0, H_prime, out) with B, A_m, A_r as used.
    """
    mat = lambda M: sympy.Matrix([[exact(v) for v in r] for r in M])  # noqa: E731
    H = mat(H) if not isinstance(H, sympy.MatrixBase) else H
    n = H.rows
    B = sympy.Matrix([[exact(v) for v in params["static_beta"]]])
    alpha = mat(params["static_alpha"])
    if alpha.shape != (n, n + 1):
        raise ValueError(f"static_alpha must be [n, n+1] = [{n}, {n + 1}], got {alpha.shape}")
    A_m, A_r = alpha[:, :1], alpha[:, 1:]
    if not dynamic:
        res = hc_layer(H, B, A_m, A_r, T)
        res.update({"B": B, "A_m": A_m, "A_r": A_r})
        return res
    W = mat(params["dynamic_alpha_fn"])
    W_beta = sympy.Matrix([[exact(v)] for v in params["dynamic_beta_fn"]])
    return dhc_layer(H, B, A_m, A_r, W_beta, W[:, :1], W[:, 1:], params["alpha_scale"], params["beta_scale"], eps, T,
                     params["layer_norm.weight"], params["layer_norm.bias"])


def module_jacobian_wrt_H(params: dict, H, T: Callable[[sympy.Matrix], sympy.Matrix], eps=None,
                          dynamic: bool = True) -> list[list[sympy.Expr]]:
    """J[i*d + j][p*d + q] = d out[i, j] / d H[p, q] of module_layer, by exact sympy differentiation at H.

    Rows follow out's row-major order, columns H's; the entries are exact expressions (evaluate with
    digits / mp at 40+ digits). Through the LayerNorm, tanh and the body T (which must be sympy-differentiable).
    """
    H = sympy.Matrix([[exact(v) for v in r] for r in H])
    n, d = H.shape
    syms = sympy.Matrix(n, d, lambda i, j: sympy.Symbol(f"_H{i}_{j}", real=True))
    out = module_layer(params, syms, T, eps, dynamic)["out"]
    at = {syms[p, q]: H[p, q] for p in range(n) for q in range(d)}
    return [[sympy.diff(out[i, j], syms[p, q]).xreplace(at) for p in range(n) for q in range(d)]
            for i in range(n) for j in range(d)]
