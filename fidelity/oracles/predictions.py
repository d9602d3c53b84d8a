"""Predicted red readings: what a named defect would make an implementation return on a fixture.

Each prediction models ONE perturbation with the oracle's own arithmetic and
is keyed by a stable name. A prediction is not an observation: the ledger
keeps it beside the reading a perturbation run actually records.

`PREDICTIONS[name]` is a Prediction(fixture, field, description, fn); `fn()`
returns an mpf or a nested list of mpf (call `predict(name)`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import mpmath
import sympy

from . import cases
from . import depth_attention as da
from . import mhc
from . import sinkhorn as sk
from ._precision import exact, mp, precision

FLOAT32_EXP_MAX = sympy.log(sympy.Float("3.40282346638528859811704183484516925440e+38", 60))
"""ln(FLT_MAX): exp of anything larger overflows to +inf in float32."""
FLOAT32_EXP_MIN = sympy.log(sympy.Rational(1, 2**150))
"""ln(2^-150): exp of anything smaller rounds to 0 in float32 (half the smallest subnormal)."""


@dataclass(frozen=True)
class Prediction:
    fixture: str
    field: str
    description: str
    fn: Callable[[], object]


def _m(value):
    if isinstance(value, (list, tuple)):
        return [_m(v) for v in value]
    return mp(value)


# ---- mHC Eq. 3 (sliced layout) -------------------------------------------------------------

def _eq3(case, post=None, res=None):
    """out of the sliced fixture with H_post / H_res replaced when given (mpf nested lists)."""
    with precision():
        hp = _m(mhc.h_post(case["b_post"])) if post is None else post
        hr = mhc.h_res(case["b_res"]) if res is None else res
        return mhc.eq3_sliced(_m([[exact(v) for v in r] for r in case["x"]]),
                              _m([[exact(v) for v in r] for r in case["y"]]), hr, hp)


def sigma_post():
    """H_post = sigma(b_post): Eq. 8's factor 2 dropped."""
    with precision():
        return _eq3(cases.MHC_EQ3, post=_m(mhc.h_pre(cases.MHC_EQ3["b_post"])))


def no_sinkhorn():
    """H_res = b_res, the raw logits (Eq. 9 skipped entirely)."""
    with precision():
        return _eq3(cases.MHC_EQ3, res=_m([[exact(v) for v in r] for r in cases.MHC_EQ3["b_res"]]))


def exp_unnormalised():
    """H_res = exp(b_res): exponentiated, never normalised (t_max = 0)."""
    with precision():
        return _eq3(cases.MHC_EQ3, res=sk.sinkhorn(cases.MHC_EQ3["b_res"], t_max=0))


def offbyone_post():
    """H_post indexed one stream off: stream j is weighted by H_post[(j+1) mod n]."""
    with precision():
        hp = _m(mhc.h_post(cases.MHC_EQ3["b_post"]))
        return _eq3(cases.MHC_EQ3, post=hp[1:] + hp[:1])


def transposed_post():
    """H_post^T read as H_post: [1, n] -> [n, 1] holds the same n numbers, so nothing changes."""
    with precision():
        hp = _m(mhc.h_post(cases.MHC_EQ3["b_post"]))
        as_matrix = [[v] for v in hp]  # the transpose
        return _eq3(cases.MHC_EQ3, post=[row[0] for row in as_matrix])


def _transposed_res(case):
    with precision():
        hr = mhc.h_res(case["b_res"])
        n = len(hr)
        return _eq3(case, res=[[hr[i][j] for i in range(n)] for j in range(n)])


def transposed_res_n3():
    """H_res^T in place of H_res on the non-symmetric n = 3 fixture."""
    return _transposed_res(cases.MHC_NONSYM_N3)


def transposed_res_n2():
    """H_res^T on the n = 2 'non-symmetric' b_res: the limit is symmetric, only M(20)'s residue differs."""
    return _transposed_res(cases.MHC_NONSYM_N2)


# ---- AttnRes --------------------------------------------------------------------------------

def _attn(convention, extra_temperature=False):
    c = cases.ATTNRES_FIXTURE
    res = da.depth_attention(c["sources"], c["query"], c["eps"], convention)
    if extra_temperature:
        d = len(c["query"])
        res = {"scores": [s / sympy.sqrt(d) for s in res["scores"]]}
        res["alpha"] = da.softmax(res["scores"])
        res["h"] = [sum(res["alpha"][i] * exact(c["sources"][i][j]) for i in range(len(c["sources"])))
                    for j in range(d)]
    with precision():
        return {k: _m(v) for k, v in res.items()}


def attnres_temperature():
    """The paper score with a 1/sqrt(d) temperature added: {"scores", "alpha", "h"}."""
    return _attn("paper", extra_temperature=True)


def attnres_l2_norm():
    """The L2 norm in place of the mean (RMS) norm, no temperature: the "l2" convention's numbers."""
    return _attn("l2")


# ---- RMSNorm --------------------------------------------------------------------------------

def rmsnorm_eps_outside():
    """x / (sqrt(mean(x^2)) + eps) * g: eps added outside the root (the RMSNorm authors' torch code)."""
    c = cases.RMSNORM_EPS
    xs = [exact(v) for v in c["x"]]
    r = sympy.sqrt(sum(v**2 for v in xs) / len(xs)) + exact(c["eps"])
    with precision():
        return _m([v / r * exact(g) for v, g in zip(xs, c["g"])])


# ---- Sinkhorn -------------------------------------------------------------------------------

def floored_linear_sinkhorn(logits, t_max: int | None = None, floor=cases.FLOOR, float32_range: bool = False):
    """A linear-domain Sinkhorn that clamps every normalisation sum to >= floor (source 004 section 4.1).

    Exact arithmetic apart from the modelled defect. With float32_range=True, exp also
    overflows to +inf above ln(FLT_MAX) and underflows to 0 below ln(2^-150), as a float32
    kernel's would; inf/inf then gives nan, as in IEEE arithmetic.
    """
    t_max = sk.table5_t_max() if t_max is None else t_max
    with precision():
        fl = mp(floor)
        hi, lo = mp(FLOAT32_EXP_MAX), mp(FLOAT32_EXP_MIN)

        def e(x):
            x = mp(x)
            if float32_range and x > hi:
                return mpmath.inf
            if float32_range and x < lo:
                return mpmath.mpf(0)
            return mpmath.exp(x)

        def div(a, b):
            if mpmath.isinf(a) and mpmath.isinf(b):
                return mpmath.nan
            return a / b

        M = [[e(x) for x in row] for row in logits]
        n, k = len(M), len(M[0])
        for _ in range(t_max):
            cs = [max(mpmath.fsum(M[i][j] for i in range(n)), fl) for j in range(k)]
            M = [[div(M[i][j], cs[j]) for j in range(k)] for i in range(n)]
            rs = [max(mpmath.fsum(r), fl) for r in M]
            M = [[div(x, s) for x in r] for r, s in zip(M, rs)]
        return M


def _extreme(offset):
    c = cases.SK_EXTREME
    return sk.rank_one_logits(c["a"], c["b"], offset)


def _extreme_row():
    c = cases.SK_EXTREME
    return sk.rank_one_logits(c["row_a"], c["row_b"], 0)


def row_first_sinkhorn(logits, t_max: int | None = None):
    """Eq. 9 with the order swapped: row normalisation first, then column."""
    t_max = sk.table5_t_max() if t_max is None else t_max
    with precision():
        M = [[mpmath.exp(mp(x)) for x in row] for row in logits]
        for _ in range(t_max):
            M = sk.col_normalise(sk.row_normalise(M))
        return M


# ---- composite --------------------------------------------------------------------------------

def composite_not_unrolled(n: int):
    """The composite taken once instead of T times: distance to J/n stays |lambda2|^1 for T = 1..8."""
    c = cases.MHC_PERTURBED
    lam = sk.constant_diagonal(n, 0, c["off"])["lambda2"]
    with precision():
        return [mp(sympy.Abs(lam)) for _ in c["T"]]


PREDICTIONS: dict[str, Prediction] = {
    "mhc.eq3.sigma_post": Prediction("mhc.eq3_sliced", "out", sigma_post.__doc__, sigma_post),
    "mhc.eq3.no_sinkhorn": Prediction("mhc.eq3_sliced", "out", no_sinkhorn.__doc__, no_sinkhorn),
    "mhc.eq3.exp_unnormalised": Prediction("mhc.eq3_sliced", "out", exp_unnormalised.__doc__, exp_unnormalised),
    "mhc.eq3.offbyone_post": Prediction("mhc.eq3_sliced", "out", offbyone_post.__doc__, offbyone_post),
    "mhc.eq3.transposed_post": Prediction("mhc.eq3_sliced", "out", transposed_post.__doc__, transposed_post),
    "mhc.eq3_nonsym_n3.transposed_res": Prediction("mhc.eq3_nonsym_n3", "out", transposed_res_n3.__doc__,
                                                   transposed_res_n3),
    "mhc.eq3_nonsym_n2.transposed_res": Prediction("mhc.eq3_nonsym_n2", "out", transposed_res_n2.__doc__,
                                                   transposed_res_n2),
    "attnres.fixture.temperature": Prediction("attnres.three_conventions", "paper", attnres_temperature.__doc__,
                                              attnres_temperature),
    "attnres.fixture.l2_norm": Prediction("attnres.three_conventions", "paper", attnres_l2_norm.__doc__,
                                          attnres_l2_norm),
    "rmsnorm.eps_outside": Prediction("rmsnorm.eps_sensitive", "y", rmsnorm_eps_outside.__doc__,
                                      rmsnorm_eps_outside),
    "sinkhorn.extreme.floor_linear.plus200": Prediction(
        "sinkhorn.extreme_offsets", "M_plus200",
        "floored linear Sinkhorn, exact arithmetic, offset +200: the floor never binds", 
        lambda: floored_linear_sinkhorn(_extreme(200))),
    "sinkhorn.extreme.floor_linear.minus200": Prediction(
        "sinkhorn.extreme_offsets", "M_minus200",
        "floored linear Sinkhorn, exact arithmetic, offset -200: the floor binds for the first "
        "normalisations, but every step is a diagonal scaling of a rank-one matrix",
        lambda: floored_linear_sinkhorn(_extreme(-200))),
    "sinkhorn.extreme.floor_linear_f32range.plus200": Prediction(
        "sinkhorn.extreme_offsets", "M_plus200",
        "floored linear Sinkhorn with float32's exp range, offset +200: exp overflows to inf, inf/inf = nan",
        lambda: floored_linear_sinkhorn(_extreme(200), float32_range=True)),
    "sinkhorn.extreme.floor_linear_f32range.minus200": Prediction(
        "sinkhorn.extreme_offsets", "M_minus200",
        "floored linear Sinkhorn with float32's exp range, offset -200: exp underflows to 0, every sum "
        "is floored, the output is the zero matrix",
        lambda: floored_linear_sinkhorn(_extreme(-200), float32_range=True)),
    "sinkhorn.extreme.floor_linear.row_minus400": Prediction(
        "sinkhorn.extreme_offsets", "M_row_minus400",
        "floored linear Sinkhorn, exact arithmetic (float64's exp range suffices), one row at -400: "
        "that row's sum stays under the floor for all 20 steps and never reaches 1",
        lambda: floored_linear_sinkhorn(_extreme_row())),
    "sinkhorn.slow_2x2.row_first": Prediction(
        "sinkhorn.slow_2x2", "M_t_max", row_first_sinkhorn.__doc__,
        lambda: row_first_sinkhorn(cases.SK_SLOW["logits"])),
    "sinkhorn.cross_ratio_2x2.row_first": Prediction(
        "sinkhorn.cross_ratio_2x2", "trajectory", "row-first order on the 2x2 fixture: M(1)",
        lambda: row_first_sinkhorn(cases.SK_2X2["logits"], t_max=1)),
    "mhc.composite.n2.not_unrolled": Prediction(
        "mhc.composite_perturbed", "n2.distance", composite_not_unrolled.__doc__, lambda: composite_not_unrolled(2)),
    "mhc.composite.n4.not_unrolled": Prediction(
        "mhc.composite_perturbed", "n4.distance", composite_not_unrolled.__doc__, lambda: composite_not_unrolled(4)),
}


def predict(name: str):
    """The predicted reading of perturbation `name` (mpf or nested lists of mpf)."""
    try:
        p = PREDICTIONS[name]
    except KeyError:
        raise KeyError(f"unknown prediction {name!r}; known: {sorted(PREDICTIONS)}") from None
    return p.fn()
