"""The registry CLAIMS in the specs are checked against, and the confirmation rule.

`QUANTITIES[name]` is a Quantity(description, fn); `fn()` returns an mpf
(exact sympy values are converted at the shared working precision).
`compare_claim(stated, computed)`: a stated decimal is CONFIRMED iff
|stated - computed| <= half a unit in its last stated digit (an integer
written without a point or exponent must match exactly), else REFUTED.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable

import mpmath
import sympy

from . import cases
from . import depth_attention as da
from . import mhc
from . import predictions as pr
from . import sinkhorn as sk
from ._precision import exact, mp, precision
from .rmsnorm import rms


@dataclass(frozen=True)
class Quantity:
    description: str
    fn: Callable[[], mpmath.mpf]


def _mpf(value) -> mpmath.mpf:
    with precision():
        return mp(value)


@lru_cache(maxsize=None)
def _attn(convention: str) -> dict:
    c = cases.ATTNRES_FIXTURE
    return da.depth_attention(c["sources"], c["query"], c["eps"], convention)


@lru_cache(maxsize=None)
def _eq3() -> dict:
    c = cases.MHC_EQ3
    return mhc.eq3_sliced_mp(c["x"], c["y"], c["b_post"], c["b_res"])


def _eq3_out(j, k):
    return _eq3()["out"][j][k]


def _eq3_paper_out(j, k):
    """The paper's layout on the same fixture: one body output F = [10, 20] broadcast to every stream."""
    c = cases.MHC_EQ3
    with precision():
        r = _eq3()
        x = mhc.to_mp_nested(c["x"])
        F = mhc.to_mp_nested(c["F"])
        H_pre = mhc.to_mp_nested(mhc.h_pre(c["b_pre"]))
        return mhc.eq3_paper(x, F, H_pre, r["H_res"], r["H_post"])["out"][j][k]


def _rel(perturbed):
    def fn():
        with precision():
            base = _eq3_out(0, 0)
            return 100 * abs(perturbed()[0][0] - base) / base
    return fn


def _init_distance(n):
    return lambda: _mpf(sk.constant_diagonal(n, cases.MHC_INIT["diag"])["identity_distance"])


def _composite(n, T, key):
    return lambda: _mpf(sk.composite(n, 0, cases.MHC_PERTURBED["off"], T)[key])


def _stiffness(n):
    def fn():
        c = cases.MHC_STIFFNESS
        base = [[c["diag"] if i == j else 0 for j in range(n)] for i in range(n)]
        bumped = [row[:] for row in base]
        i, j = c["entry"]
        bumped[i][j] += c["bump"]
        return sk.max_abs_diff(sk.sinkhorn(bumped), sk.sinkhorn(base))
    return fn


def _params(n, names=None):
    return lambda: _mpf(mhc.param_count(cases.MHC_PARAMS["D"], n, names))


def _fraction(n):
    return lambda: _mpf(sympy.Rational(100 * mhc.param_count(cases.MHC_PARAMS["D"], n),
                                       cases.MHC_PARAMS["model_params"]))


def _launches():
    c = cases.SINKHORN_LAUNCHES
    return _mpf(sk.table5_t_max() * c["directions"] * c["ops_per_direction"])


def _ablation_share(arm):
    a = {k: exact(v) for k, v in cases.MHC_ABLATION.items()}
    total = a["none"] - a["all"]
    increments = {"hres": a["none"] - a["H_res"], "hpre": a["H_res"] - a["H_res+H_pre"],
                  "hpost": a["H_res+H_pre"] - a["all"]}
    return lambda: _mpf(100 * increments[arm] / total)


def _hc_gain(a, b):
    t = {k: exact(v) for k, v in cases.HC_TABLE1.items()}
    return lambda: _mpf(t[a] - t[b])


def _build() -> dict[str, Quantity]:
    q: dict[str, Quantity] = {}
    fx = "fixture B=T=1, d=4, sources e0, e1, query 2 e0, eps 1e-5"
    for conv in da.CONVENTIONS:
        q[f"attnres.fixture.{conv}.score0"] = Quantity(f"{conv} convention, score of source 0 ({fx})",
                                                       lambda c=conv: _mpf(_attn(c)["scores"][0]))
        q[f"attnres.fixture.{conv}.alpha0"] = Quantity(f"{conv} convention, weight of source 0 ({fx})",
                                                       lambda c=conv: _mpf(_attn(c)["alpha"][0]))
        q[f"attnres.fixture.{conv}.out0"] = Quantity(f"{conv} convention, output component 0 ({fx})",
                                                     lambda c=conv: _mpf(_attn(c)["h"][0]))
    q["attnres.fixture.gap.paper_l2"] = Quantity(
        "alpha0(paper) - alpha0(l2) on the AttnRes fixture",
        lambda: _mpf(_attn("paper")["alpha"][0] - _attn("l2")["alpha"][0]))
    q["attnres.fixture.gap.l2_l2_sqrt_d"] = Quantity(
        "alpha0(l2) - alpha0(l2_sqrt_d) on the AttnRes fixture",
        lambda: _mpf(_attn("l2")["alpha"][0] - _attn("l2_sqrt_d")["alpha"][0]))
    q["rmsnorm.example.rms_10_20_30_40"] = Quantity(
        "sqrt(mean([100, 400, 900, 1600])), the RMS of [10, 20, 30, 40], eps = 0",
        lambda: _mpf(rms(cases.RMSNORM_EXAMPLE["x"], cases.RMSNORM_EXAMPLE["eps"])))

    sl = "sliced-layout Eq. 3 fixture (n = C = 2, alpha = 0)"
    q["mhc.eq3.h_post0"] = Quantity(f"H_post[0] = 2 sigma(-1/2), {sl}", lambda: _eq3()["H_post"][0])
    q["mhc.eq3.h_post1"] = Quantity(f"H_post[1] = 2 sigma(3/2), {sl}", lambda: _eq3()["H_post"][1])
    q["mhc.eq3.h_res00"] = Quantity(f"H_res[0,0] = Sinkhorn(b_res)[0,0], {sl}", lambda: _eq3()["H_res"][0][0])
    for j in range(2):
        for k in range(2):
            q[f"mhc.eq3.out{j}{k}"] = Quantity(f"out[{j},{k}], {sl}", lambda j=j, k=k: _eq3_out(j, k))
            q[f"mhc.eq3.paper_layout.out{j}{k}"] = Quantity(
                f"out[{j},{k}] in the paper's layout (F = [10, 20], stream 0's body output, broadcast to every "
                f"stream), same H_res and H_post as the {sl}", lambda j=j, k=k: _eq3_paper_out(j, k))
    perturbed = {
        "sigma_post": (pr.sigma_post, "H_post = sigma (factor 2 dropped)"),
        "no_sinkhorn": (pr.no_sinkhorn, "H_res = raw b_res logits (Sinkhorn skipped)"),
        "offbyone_post": (pr.offbyone_post, "H_post indexed one stream off"),
        "transposed_post": (pr.transposed_post, "H_post transposed ([1, n] -> [n, 1], a no-op)"),
    }
    for key, (fn, what) in perturbed.items():
        q[f"mhc.eq3.{key}.out00"] = Quantity(f"out[0,0] with {what}, {sl}", lambda fn=fn: fn()[0][0])
        if key != "transposed_post":
            q[f"mhc.eq3.{key}.rel"] = Quantity(f"100 |perturbed - out00| / out00 (a percentage) with {what}, {sl}",
                                               _rel(fn))
    for n in (2, 4):
        q[f"mhc.init.hres_identity_distance.n{n}"] = Quantity(
            f"max|SK(10 I) - I| at n = {n} = (n-1)/(e^10 + n - 1)", _init_distance(n))
    q["mhc.perturbed.hres_identity_distance.n2"] = Quantity(
        "max|SK(2(J - I)) - I| at n = 2 = e^2/(1 + e^2)",
        lambda: _mpf(sk.constant_diagonal(2, 0, cases.MHC_PERTURBED["off"])["identity_distance"]))
    for n in (2, 4):
        q[f"mhc.composite.n{n}.lambda2"] = Quantity(
            f"second eigenvalue of SK(2(J - I)) at n = {n}: (1 - e^2)/(1 + (n-1) e^2)", _composite(n, 1, "lambda2"))
    for T in cases.MHC_PERTURBED["T"]:
        q[f"mhc.composite.n2.distance.T{T}"] = Quantity(
            f"||H^T - J/n||_2 = |lambda2|^T at n = 2, T = {T}, H = SK(2(J - I))", _composite(2, T, "distance"))
    for T in cases.MHC_PERTURBED["T"]:
        q[f"mhc.composite.n2.offdiag.T{T}"] = Quantity(
            f"off-diagonal mass of H^T = (n-1)(1 - lambda2^T) at n = 2, T = {T}", _composite(2, T, "offdiag"))
    q["mhc.composite.n4.offdiag_gap.T4"] = Quantity(
        "|offdiag(H^4) - (n - 1)| at n = 4 = (n-1)|lambda2|^4",
        lambda: _mpf(abs(sk.composite(4, 0, cases.MHC_PERTURBED["off"], 4)["offdiag"] - 3)))
    D = cases.MHC_PARAMS["D"]
    for n in (2, 4):
        q[f"mhc.params.n{n}_d{D}"] = Quantity(f"mHC block parameters from the shape table, D = {D}, n = {n}",
                                              _params(n))
    q[f"mhc.params.unwired_pre.n2_d{D}"] = Quantity(
        f"phi_pre + alpha_pre + b_pre = Dn + 1 + n at D = {D}, n = 2", _params(2, ["phi_pre", "alpha_pre", "b_pre"]))
    q[f"mhc.params.phi_pre.n2_d{D}"] = Quantity(f"phi_pre = D n at D = {D}, n = 2", _params(2, ["phi_pre"]))
    for n in (2, 4):
        q[f"mhc.params.fraction.n{n}"] = Quantity(
            f"mHC block parameters at n = {n} as a percentage of the stated 9 197 390-parameter model", _fraction(n))
    for n in (2, 4):
        q[f"mhc.stiffness.one_unit_offdiag.n{n}"] = Quantity(
            f"max|SK(10 I + E_01) - SK(10 I)| at n = {n}, t_max = Table 5's", _stiffness(n))
    q["mhc.sinkhorn.launches_per_call"] = Quantity("t_max (Table 5) iterations x 2 directions x 7 ops", _launches)
    for arm in ("hres", "hpre", "hpost"):
        q[f"mhc.ablation.{arm}_share"] = Quantity(
            f"{arm} increment of the mHC ablation gap as a percentage of the full 0.027", _ablation_share(arm))
    q["hc.table1.gain_n2"] = Quantity("HC Table 1: baseline - DHCx2 V2 loss", _hc_gain("baseline", "n2"))
    q["hc.table1.gain_n4_over_n2"] = Quantity("HC Table 1: DHCx2 - DHCx4 V2 loss", _hc_gain("n2", "n4"))
    q["hc.table1.gain_n8_over_n4"] = Quantity("HC Table 1: DHCx4 - DHCx8 V2 loss", _hc_gain("n4", "n8"))
    q["hc.table1.total_gain_n8"] = Quantity("HC Table 1: baseline - DHCx8 V2 loss", _hc_gain("baseline", "n8"))
    q["hc.table1.total_gain_n4"] = Quantity("HC Table 1: baseline - DHCx4 V2 loss", _hc_gain("baseline", "n4"))
    return q


QUANTITIES: dict[str, Quantity] = _build()


def value(name: str) -> mpmath.mpf:
    """The computed value of quantity `name`."""
    try:
        return QUANTITIES[name].fn()
    except KeyError:
        raise KeyError(f"unknown quantity {name!r}") from None


# ---- the confirmation rule --------------------------------------------------------------------

_NUMBER = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$")
_SPACES = str.maketrans("", "", " \u00a0\u2009\u202f_")


def _exact_fraction(value: Any) -> Fraction:
    """An exact rational for int / Fraction / sympy Rational / mpf (its binary value) / sympy real."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if isinstance(value, sympy.Basic) and value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    with precision():
        x = mp(value)
        if not mpmath.isfinite(x):
            raise ValueError(f"computed value {x} is not finite")
        sign, man, exp, _ = x._mpf_
        man = -int(man) if sign else int(man)
        return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


def parse_stated(stated: str) -> tuple[Fraction, Fraction]:
    """The stated decimal as an exact rational, and half a unit in its last stated digit (0 for a bare integer).

    Accepts "4.000002", "-0.7616", "4.540e-5", "6 155", "0.067 %". A trailing % sign is dropped
    (the quantity compared is then itself a percentage) and marks the number as a rounded
    decimal: "81 %" allows 0.5, whereas a bare integer such as "6155" must match exactly.
    """
    text = stated.strip().translate(_SPACES).replace("\u2212", "-")
    percent = text.endswith("%")
    if percent:
        text = text[:-1]
    m = _NUMBER.match(text)
    if not m or not (m.group(2) or m.group(3)):
        raise ValueError(f"cannot read {stated!r} as a decimal number")
    sign, whole, frac, exp = m.group(1), m.group(2) or "0", m.group(3), m.group(4)
    value = Fraction(Decimal(f"{sign}{whole}.{frac or '0'}e{exp or 0}"))
    if frac is None and exp is None and not percent:
        return value, Fraction(0)
    places = len(frac or "") - int(exp or 0)
    unit = Fraction(1, 10**places) if places >= 0 else Fraction(10**-places)
    return value, unit / 2


def compare_claim(stated: str, computed) -> dict:
    """CONFIRMED iff |stated - computed| <= half a unit in the stated string's last digit, else REFUTED.

    Exact rational arithmetic: the stated string is read as the decimal it prints, `computed`
    by its exact value (an mpf by its binary value at the working precision).
    """
    s, allowed = parse_stated(stated)
    c = _exact_fraction(computed)
    diff = abs(s - c)
    with precision():
        fmt = lambda f: mpmath.nstr(mpmath.mpf(f.numerator) / f.denominator, 30)  # noqa: E731
        return {
            "verdict": "CONFIRMED" if diff <= allowed else "REFUTED",
            "stated": stated,
            "computed": fmt(c),
            "difference": fmt(c - s),
            "allowed": fmt(allowed),
        }
