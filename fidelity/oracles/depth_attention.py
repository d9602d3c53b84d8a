"""AttnRes depth attention (arXiv:2603.15031 Eq. 2-4) under three score conventions.

Keys are the normalised sources (times an optional gain g), values are the
raw sources, and ONE softmax runs over all sources:

    "paper":     s_i = q . (v_i / sqrt(mean(v_i^2) + eps) * g)          RMSNorm, no temperature
    "l2":        s_i = q . (v_i / sqrt(sum(v_i^2) + eps) * g)           L2 norm, no temperature
    "l2_sqrt_d": s_i = q . (v_i / sqrt(sum(v_i^2) + eps) * g) / sqrt(d) L2 norm and 1/sqrt(d)

    alpha_i = exp(s_i) / sum_j exp(s_j),   h = sum_i alpha_i v_i

Everything is exact sympy; `coincidences()` proves with sympy which
conventions agree.
"""
from __future__ import annotations

from typing import Sequence

import sympy

from ._precision import exact

CONVENTIONS = ("paper", "l2_sqrt_d", "l2")


def _check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown score convention {convention!r}; expected one of {CONVENTIONS}")


def score(query: Sequence, source: Sequence, eps, convention: str = "paper", gain: Sequence | None = None) -> sympy.Expr:
    """The score s_i of one source under `convention`."""
    _check_convention(convention)
    q = [exact(v) for v in query]
    v = [exact(x) for x in source]
    d = len(v)
    if len(q) != d:
        raise ValueError(f"query has {len(q)} entries, source has {d}")
    g = [sympy.Integer(1)] * d if gain is None else [exact(x) for x in gain]
    sq = sum(x**2 for x in v)
    if convention == "paper":
        norm = sympy.sqrt(sq / d + exact(eps))
    else:
        norm = sympy.sqrt(sq + exact(eps))
    s = sum(qj * vj * gj for qj, vj, gj in zip(q, v, g)) / norm
    if convention == "l2_sqrt_d":
        s = s / sympy.sqrt(d)
    return s


def softmax(scores: Sequence) -> list[sympy.Expr]:
    """exp(s_i) / sum_j exp(s_j), exact."""
    e = [sympy.exp(s) for s in scores]
    total = sum(e)
    return [x / total for x in e]


def depth_attention(sources: Sequence[Sequence], query: Sequence, eps, convention: str = "paper",
                    gain: Sequence | None = None) -> dict:
    """Scores, weights alpha and output h of one depth-attention step.

    sources: L vectors of length d (the values; keys are their normalised form).
    Returns {"scores": [L], "alpha": [L], "h": [d]} as exact sympy expressions.
    """
    if not sources:
        raise ValueError("depth attention needs at least one source")
    vs = [[exact(x) for x in v] for v in sources]
    s = [score(query, v, eps, convention, gain) for v in vs]
    alpha = softmax(s)
    d = len(vs[0])
    h = [sum(alpha[i] * vs[i][j] for i in range(len(vs))) for j in range(d)]
    return {"scores": s, "alpha": alpha, "h": h}


def depth_attention_mp(sources: Sequence[Sequence], query: Sequence, eps, convention: str = "paper") -> list:
    """`depth_attention`'s h as `mp` gives it (DPS digits), ~50x faster: the same formulas in mpmath at
    GUARD_DPS, rounded to DPS (sources and query mpf or exact)."""
    from ._precision import at_dps, guarded, mp
    import mpmath

    _check_convention(convention)
    with guarded():
        vs = [[mp(x) for x in v] for v in sources]
        q, e, d = [mp(x) for x in query], mp(eps), len(vs[0])
        s = []
        for v in vs:
            sq = mpmath.fsum(x * x for x in v)
            norm = mpmath.sqrt(sq / d + e) if convention == "paper" else mpmath.sqrt(sq + e)
            si = mpmath.fsum(qj * vj for qj, vj in zip(q, v)) / norm
            s.append(si / mpmath.sqrt(d) if convention == "l2_sqrt_d" else si)
        w = [mpmath.exp(x) for x in s]
        total = mpmath.fsum(w)
        alpha = [x / total for x in w]
        return at_dps([mpmath.fsum(alpha[i] * vs[i][j] for i in range(len(vs))) for j in range(d)])


def coincidences(max_d: int = 4, n_sources: int = 3) -> dict[str, dict]:
    """Which conventions coincide, proved with sympy symbols.

    Returns {name: {"statement", "holds", "evidence"}}. Statements:
    - zero_query_uniform: at q = 0 every convention gives alpha_i = 1/L exactly (d = 1..max_d).
    - d1_all_equal: at d = 1 the three score functions are identical, eps included.
    - l2_is_sqrt_d_times_l2_sqrt_d: for every d, s_l2 = sqrt(d) * s_l2_sqrt_d exactly.
    - paper_is_sqrt_d_times_l2_at_eps0: at eps = 0, s_paper = sqrt(d) * s_l2 (so = d * s_l2_sqrt_d).
    - eps_breaks_the_factor: for d > 1 and eps > 0, s_paper / s_l2 = sqrt((S+eps)/(S/d+eps)),
      which is not constant in S = sum(v^2) (it equals sqrt(d) only as eps -> 0).
    - coincide_only_at_d1: sqrt(d) = 1 has the single positive solution d = 1, and for each
      d = 2..max_d a witness (q = v = e_0, eps = 0) gives three distinct scores.
    """
    out: dict[str, dict] = {}
    eps = sympy.Symbol("epsilon", positive=True)

    # zero query: every score is 0, so alpha = 1/L for any sources and eps.
    ok = True
    for d in range(1, max_d + 1):
        srcs = [[sympy.Symbol(f"v{i}_{j}", real=True) for j in range(d)] for i in range(n_sources)]
        for c in CONVENTIONS:
            res = depth_attention(srcs, [0] * d, eps, c)
            ok &= all(sympy.simplify(a - sympy.Rational(1, n_sources)) == 0 for a in res["alpha"])
    out["zero_query_uniform"] = {
        "statement": "at q = 0 all three conventions give alpha_i = 1/L for any sources and eps",
        "holds": bool(ok),
        "evidence": f"sympy, symbolic sources, d = 1..{max_d}, L = {n_sources}: alpha_i - 1/L simplifies to 0",
    }

    # d = 1: mean(v^2) = sum(v^2) and sqrt(1) = 1.
    q, v = sympy.symbols("q v", real=True)
    s = {c: score([q], [v], eps, c) for c in CONVENTIONS}
    d1 = all(sympy.simplify(s[a] - s[b]) == 0 for a in CONVENTIONS for b in CONVENTIONS)
    out["d1_all_equal"] = {
        "statement": "at d = 1 the paper, l2 and l2_sqrt_d scores are the same function (eps included)",
        "holds": bool(d1),
        "evidence": "sympy: pairwise differences of the symbolic d = 1 scores simplify to 0",
    }

    factor_exact = True
    factor_eps0 = True
    for d in range(1, max_d + 1):
        qs = [sympy.Symbol(f"q{j}", real=True) for j in range(d)]
        vs = [sympy.Symbol(f"v{j}", positive=True) for j in range(d)]
        sp = score(qs, vs, eps, "paper")
        s2 = score(qs, vs, eps, "l2")
        s2d = score(qs, vs, eps, "l2_sqrt_d")
        factor_exact &= sympy.simplify(s2 - sympy.sqrt(d) * s2d) == 0
        factor_eps0 &= sympy.simplify(sp.subs(eps, 0) - sympy.sqrt(d) * s2.subs(eps, 0)) == 0
    out["l2_is_sqrt_d_times_l2_sqrt_d"] = {
        "statement": "s_l2 = sqrt(d) * s_l2_sqrt_d exactly, for every eps",
        "holds": bool(factor_exact),
        "evidence": f"sympy, symbolic q, v, eps, d = 1..{max_d}",
    }
    out["paper_is_sqrt_d_times_l2_at_eps0"] = {
        "statement": "at eps = 0, s_paper = sqrt(d) * s_l2 = d * s_l2_sqrt_d",
        "holds": bool(factor_eps0),
        "evidence": f"sympy, symbolic q, v, d = 1..{max_d}",
    }

    S, dd = sympy.symbols("S d", positive=True)
    ratio = sympy.sqrt((S + eps) / (S / dd + eps))
    depends_on_S = sympy.simplify(sympy.diff(ratio, S)) != 0
    limit_is_sqrt_d = sympy.simplify(sympy.limit(ratio, eps, 0) - sympy.sqrt(dd)) == 0
    d1_ratio_is_one = sympy.simplify(ratio.subs(dd, 1) - 1) == 0
    out["eps_breaks_the_factor"] = {
        "statement": "for eps > 0, s_paper / s_l2 = sqrt((S+eps)/(S/d+eps)) depends on S = sum(v^2) unless d = 1; "
                     "its eps -> 0 limit is sqrt(d)",
        "holds": bool(depends_on_S and limit_is_sqrt_d and d1_ratio_is_one),
        "evidence": "sympy: d/dS of the ratio is not identically 0; limit eps->0 equals sqrt(d); at d = 1 the ratio is 1",
    }

    sols = sympy.solve(sympy.Eq(sympy.sqrt(dd), 1), dd)
    distinct = True
    for d in range(2, max_d + 1):
        e0 = [1] + [0] * (d - 1)
        vals = {c: score(e0, e0, 0, c) for c in CONVENTIONS}
        distinct &= len({sympy.nsimplify(x) for x in vals.values()}) == 3
    out["coincide_only_at_d1"] = {
        "statement": "the conventions coincide as functions only at d = 1; for d > 1 they differ by sqrt(d) and d (up to eps)",
        "holds": bool(sols == [1] and distinct),
        "evidence": f"sympy: solve(sqrt(d) = 1) = {sols}; witness q = v = e_0, eps = 0 gives scores "
                    f"sqrt(d), 1, 1/sqrt(d) for d = 2..{max_d}",
    }
    return out


def gradients(sources: Sequence[Sequence], query: Sequence, eps, convention: str = "paper",
              gain: Sequence | None = None, loss_weights: Sequence | None = None) -> dict:
    """Derivatives at the given point, from the hand-derived closed form, in mpmath.

    With r_i = sqrt(m sum(v_i^2) + eps), m = 1/d ("paper") or 1 (L2), t = 1 or 1/sqrt(d):
        ds_i/dv_ij   = t (q_j g_j / r_i - m v_ij (q . (v_i * g)) / r_i^3)
        loss         = sum_j c_j h_j,  u_i = c . v_i,  dloss/ds_i = alpha_i (u_i - sum_k alpha_k u_k)
        dloss/dv_ij  = alpha_i c_j + dloss/ds_i * ds_i/dv_ij
        dloss/dq_j   = sum_i dloss/ds_i * t v_ij g_j / r_i
    The m in ds_i/dv_ij is the factor the source 000 derivative defect dropped: it is 1 under
    "l2", so its absence is invisible there. Returns mpf lists: "dscore_dsource" [L][d],
    "dloss_dsource" [L][d], "dloss_dquery" [d]. (The tests check this against numerical
    differentiation of the exact forward.)
    """
    _check_convention(convention)
    from ._precision import mp, precision
    import mpmath

    with precision():
        V = [[mp(x) for x in v] for v in sources]
        L, d = len(V), len(V[0])
        q = [mp(x) for x in query]
        g = [mpmath.mpf(1)] * d if gain is None else [mp(x) for x in gain]
        c = [mpmath.mpf(1)] * d if loss_weights is None else [mp(x) for x in loss_weights]
        e = mp(eps)
        m = mpmath.mpf(1) / d if convention == "paper" else mpmath.mpf(1)
        t = 1 / mpmath.sqrt(d) if convention == "l2_sqrt_d" else mpmath.mpf(1)
        r = [mpmath.sqrt(m * mpmath.fsum(x * x for x in v) + e) for v in V]
        dot = [mpmath.fsum(q[j] * v[j] * g[j] for j in range(d)) for v in V]
        s = [t * dot[i] / r[i] for i in range(L)]
        top = max(s)
        w = [mpmath.exp(x - top) for x in s]
        z = mpmath.fsum(w)
        alpha = [x / z for x in w]
        u = [mpmath.fsum(c[j] * v[j] for j in range(d)) for v in V]
        ubar = mpmath.fsum(a * x for a, x in zip(alpha, u))
        dlds = [alpha[i] * (u[i] - ubar) for i in range(L)]
        ds = [[t * (q[j] * g[j] / r[i] - m * V[i][j] * dot[i] / r[i] ** 3) for j in range(d)] for i in range(L)]
        dl = [[alpha[i] * c[j] + dlds[i] * ds[i][j] for j in range(d)] for i in range(L)]
        dq = [mpmath.fsum(dlds[i] * t * V[i][j] * g[j] / r[i] for i in range(L)) for j in range(d)]
        return {"dscore_dsource": ds, "dloss_dsource": dl, "dloss_dquery": dq}
