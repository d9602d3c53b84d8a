"""Fixtures for gates on AttnRes as users run it: defaults as shipped, every parameter alive, the oracle's Jacobian.

Every number here is computed by the oracles (fidelity.oracles.block_attnres.stack_forward,
depth_mix; fidelity.oracles.depth_attention.depth_attention) at the values the spec fixes:
the default eps is read from attnres.eps (`value:`), never typed here. The conventions'
default "paper" is a string choice, not a number: attnres.score_conventions says it ("the
default and the only paper-faithful one").

The module case: L = 5 affine sublayers f_l(h) = W_l h + c_l in N = 2 blocks ([1, 2, 3], [4, 5]),
d = 4, h1 at two positions. Every input is a dyadic rational (exact in float32), drawn once from
a seeded generator. The keys are small (|entries| ~ 1e-3, mean(v^2) ~ 1e-6, the size of the
default eps), so eps and the convention both move the output by many tolerances: each builder
checks that every plausible wrong default lands >= SEPARATION_MIN tolerances away (else it
refuses to build: a weak fixture is an error, not a gate).
"""
from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath

from fidelity.fixture_store import f10, fixture, inp, num
from fidelity.oracles import block_attnres as ba
from fidelity.oracles import cases
from fidelity.oracles import depth_attention as da
from fidelity.oracles._precision import mp, precision
from fidelity.oracles.derivatives import flatten, jacobian_at_dps, shape_of, unflatten
from fidelity.spec.values import spec_value_exact

SEPARATION_MIN = 10.0
"""A wrong default must land at least this many gate tolerances from the right output."""

MODULE_GATE_RTOL = {"float32": 64 * 2.0 ** -23, "float64": 64 * 2.0 ** -52}
"""The relative tolerance (against the output's scale) of the module defaults gate: 64 eps
(tests/gates/test_attnres_module_defaults.py states why). Separation is checked at float32's."""

DEPTH_GATE_RTOL = {"float32": 32 * 2.0 ** -23, "float64": 32 * 2.0 ** -52}
"""The relative tolerance of tests/gates/test_attnres_default_eps.py: 32 eps."""

WRONG_EPS = ("0", "1e-8", "1e-7", "1e-5", "1e-4")
"""Plausible wrong eps defaults: none, the neighbouring decades, the RMSNorm authors' 1e-8."""

WRONG_CONVENTIONS = ("l2_sqrt_d", "l2")

L, N, D = 5, 2, 4
SEED = 4
"""Of seeds 1..5 and 20261214, the one whose smallest alive change (2.6% of the output's scale) is largest."""


def _draw(rng: random.Random, shape, lo: int, hi: int, denom: int, *, avoid_zero: bool = False):
    """Nested lists of k/denom, k uniform in [lo, hi] (k != 0 if avoid_zero), as exact strings."""
    if not shape:
        while True:
            k = rng.randint(lo, hi)
            if k or not avoid_zero:
                return f"{k}/{denom}" if denom != 1 else str(k)
    return [_draw(rng, shape[1:], lo, hi, denom, avoid_zero=avoid_zero) for _ in range(shape[0])]


def _show(x) -> str:
    """An exact spec value as a person writes it (1/1000000 -> 1e-06)."""
    return f"{float(x):g}"


def module_case() -> dict:
    """The module case's inputs (exact strings), drawn from random.Random(SEED)."""
    rng = random.Random(SEED)
    return {
        "h1": _draw(rng, (2, D), -4, 4, 2048, avoid_zero=True),   # |entries| <= 2e-3
        "W": _draw(rng, (L, D, D), -4, 4, 8),                      # |entries| <= 1/2
        "c": _draw(rng, (L, D), -4, 4, 2048),                      # |entries| <= 2e-3
        "queries": _draw(rng, (L, D), -4, 4, 4, avoid_zero=True),  # |entries| <= 1
        "output_query": _draw(rng, (D,), -4, 4, 4, avoid_zero=True),
        "gains": [[f"{8 + int(k)}/8" for k in row] for row in _draw(rng, (L, D), -3, 3, 1)],  # 1 +- 3/8
        "output_gain": [f"{8 + int(k)}/8" for k in _draw(rng, (D,), -3, 3, 1)],
    }


def _sublayers(c: dict):
    return [ba.affine(c["W"][l], c["c"][l]) for l in range(L)]


def _run(c: dict, *, eps, convention="paper", queries=None, output_query=None, gains=None, output_gain=None):
    """Per position: the stack's sublayer inputs and output, stacked as [L + 1, positions, d] (h_1..h_L, h_out)."""
    q = c["queries"] if queries is None else queries
    oq = c["output_query"] if output_query is None else output_query
    runs = [ba.stack_forward(h, _sublayers(c), N, q, oq, eps, convention, gains, output_gain) for h in c["h1"]]
    return [[runs[p]["h"][l] for p in range(len(runs))] for l in range(L)] + [[r["out"] for r in runs]]


def _max_abs(x) -> mpmath.mpf:
    if isinstance(x, (list, tuple)):
        return max(_max_abs(v) for v in x)
    return abs(x)


def _max_abs_diff(a, b) -> mpmath.mpf:
    if isinstance(a, (list, tuple)):
        return max(_max_abs_diff(x, y) for x, y in zip(a, b))
    return abs(a - b)


def _separation(right, wrong, rtol: float) -> float:
    """max |wrong - right| / max |right|, in units of rtol (the gates judge against the output's scale)."""
    with precision():
        return float(_max_abs_diff(right, wrong) / _max_abs(right) / rtol)


def _wrong_defaults(right, run, rtol: float, what: str) -> tuple[dict, dict]:
    """Predictions for each wrong eps / convention default, and their separations; refuse a weak one."""
    preds, seps = {}, {}
    for name, kwargs in ([(f"eps_{e}", {"eps": e}) for e in WRONG_EPS]
                         + [(f"convention_{cv}", {"convention": cv}) for cv in WRONG_CONVENTIONS]):
        wrong = run(**kwargs)
        seps[name] = _separation(right, wrong, rtol)
        if seps[name] < SEPARATION_MIN:
            raise ValueError(f"{what}: the wrong default {name} lands only {seps[name]:.3g} tolerances from the right "
                             f"output (< {SEPARATION_MIN}); choose smaller keys or another case")
        preds[name] = {"wrong": wrong, "kwargs": kwargs}
    return preds, seps


@fixture("attnres.module_defaults", "fidelity.oracles.block_attnres.stack_forward",
         ["attnres.eps", "attnres.score_conventions", "attnres.eq2", "attnres.eq5", "attnres.eq6",
          "attnres.rmsnorm_gain"])
def _module_defaults():
    c = module_case()
    eps = spec_value_exact("attnres.eps")
    right = _run(c, eps=eps)
    preds, seps = _wrong_defaults(right, lambda **kw: _run(c, **{"eps": eps, **kw}), MODULE_GATE_RTOL["float32"],
                                  "attnres.module_defaults")
    with precision():
        key_ms = [mpmath.fsum(mp(x) ** 2 for x in h) / D for h in c["h1"]]
    return {
        "derivation": [
            f"Block AttnRes, L = {L} affine sublayers f_l(h) = W_l h + c_l in N = {N} blocks [1, 2, 3], [4, 5], "
            f"d = {D}, h1 at two positions; inputs drawn once from random.Random({SEED}) as dyadic rationals.",
            "The factory's defaults as the spec fixes them: eps = " + _show(eps) + " (attnres.eps value), convention "
            "'paper' (attnres.score_conventions: the default), no learned gain (g = 1), direct mode.",
            "The gate writes the pseudo-queries (queries, output_query) only: at their zero init every score is 0 and "
            "neither eps nor the convention could show.",
            "Keys are small: mean(h1^2) = " + ", ".join(f10(v) for v in key_ms) + " at the two positions, the size "
            "of eps, so s = q . v / sqrt(mean(v^2) + eps) depends on eps at first order.",
            "Layer l of block n attends Eq. 6's sources with queries[l]; the output attends [b0, b1, b2] with "
            "output_query. expected.h_and_out = [h_1, ..., h_5, h_out] per position.",
            "Each plausible wrong default (eps " + ", ".join(WRONG_EPS) + "; conventions " + ", ".join(WRONG_CONVENTIONS)
            + ") is at least " + f"{min(seps.values()):.3g}" + " float32 gate tolerances (64 eps of the output's scale) "
            "away; the builder refuses a case where one is under " + f"{SEPARATION_MIN:g}.",
        ],
        "inputs": {k: inp(c[k]) for k in ("h1", "W", "c", "queries", "output_query")} | {"num_blocks": N},
        "expected": {"h_and_out": num(right)},
        "params": {"eps": inp(str(eps)), "eps_from": "attnres.eps", "convention": "paper",
                   "convention_from": "attnres.score_conventions", "learned_gain": False, "mode": "direct",
                   "separation_in_tolerances": {k: round(v, 3) for k, v in seps.items()},
                   "tolerance_checked": "64 eps(float32) relative to max |h_and_out|"},
        "predictions": {f"module_defaults.{name}": {
            "description": f"the block factory's default {', '.join(f'{k} = {v}' for k, v in p['kwargs'].items())} "
                           "in place of the spec's",
            "field": "h_and_out", **num(p["wrong"])} for name, p in preds.items()},
    }


@fixture("attnres.depth_defaults", "fidelity.oracles.depth_attention.depth_attention",
         ["attnres.eps", "attnres.score_conventions", "attnres.eq2"])
def _depth_defaults():
    c = cases.ATTNRES_DEFAULT_EPS
    eps = spec_value_exact("attnres.eps")
    res = da.depth_attention(c["sources"], c["query"], eps, "paper")
    right = [res["alpha"], res["h"]]
    preds, seps = {}, {}
    for name, (e, cv) in ([(f"eps_{w}", (w, "paper")) for w in WRONG_EPS]
                          + [(f"convention_{cv}", (eps, cv)) for cv in WRONG_CONVENTIONS]):
        r = da.depth_attention(c["sources"], c["query"], e, cv)
        # the gate judges alpha entrywise (relative to each entry) and h against its scale: the weaker of the two
        with precision():
            rel_alpha = max(abs(mp(a) - mp(b)) / abs(mp(b)) for a, b in zip(r["alpha"], res["alpha"]))
        seps[name] = max(float(rel_alpha) / DEPTH_GATE_RTOL["float32"],
                         _separation(res["h"], r["h"], DEPTH_GATE_RTOL["float32"]))
        if seps[name] < SEPARATION_MIN:
            raise ValueError(f"attnres.depth_defaults: wrong default {name} only {seps[name]:.3g} tolerances away")
        preds[f"depth_defaults.{name}"] = {"description": f"depth attention's default eps = {e}, convention {cv!r}",
                                           "field": "alpha", **num(r["alpha"])}
    return {
        "derivation": [
            "Depth attention called with no optional argument: eps = " + _show(eps) + " (attnres.eps value), "
            "convention 'paper' (attnres.score_conventions), no gain.",
            "d = 4, L = 2: h0 = e0 / 1000, h1 = e1 / 500, w = 2 e0; mean(h0^2) = 2.5e-7, the size of eps.",
            "score0 = 0.002 / sqrt(2.5e-7 + eps) = " + f10(res["scores"][0]) + ", score1 = 0 (w . h1 = 0); "
            "alpha0 = 1 / (1 + e^-score0) = " + f10(res["alpha"][0]) + ".",
            "Under l2 the root holds sum(h0^2) = 1e-6 in place of the mean; under l2_sqrt_d the score is halved again.",
            "Every wrong default (eps " + ", ".join(WRONG_EPS) + "; conventions " + ", ".join(WRONG_CONVENTIONS)
            + ") is >= " + f"{min(seps.values()):.3g}" + " float32 gate tolerances (32 eps) away.",
        ],
        "inputs": {"sources": inp(c["sources"]), "query": inp(c["query"])},
        "expected": {"alpha": num(res["alpha"]), "h": num(res["h"]), "scores": num(res["scores"])},
        "params": {"eps": inp(str(eps)), "eps_from": "attnres.eps", "convention": "paper",
                   "convention_from": "attnres.score_conventions", "gain": "none (ones)",
                   "separation_in_tolerances": {k: round(v, 3) for k, v in seps.items()}},
        "predictions": preds,
    }


ALIVE_SIZE = {"queries": "1/4", "output_query": "1/4", "gains": "1/4", "output_gain": "1/4"}
"""The stated size of each parameter's move: every entry of the direction is +-size (seeded signs)."""

ALIVE_VISIBLE = 1e-2
"""The oracle's change must be at least this fraction of the output's scale (far above float32 rounding)."""


FIRST_LAYER_ROW = 0
"""Row 0 of queries and gains belongs to layer 1, whose only Eq. 6 source is b_0 = h1: a softmax over one
source is 1 whatever the score, so that row has no effect on any output, in every AttnRes stack (not a
defect; the oracle's change is exactly 0). The alive and reach gates leave it out and say so."""


def alive_instances() -> list[str]:
    """The parameter instances of the alive gate: one per sublayer row of queries and gains (but layer 1's,
    FIRST_LAYER_ROW), and each output one."""
    rows = [l for l in range(L) if l != FIRST_LAYER_ROW]
    return [f"queries[{l}]" for l in rows] + ["output_query"] + [f"gains[{l}]" for l in rows] + ["output_gain"]


def _direction(rng: random.Random, size: str) -> list[str]:
    return [("" if rng.random() < 0.5 else "-") + size for _ in range(D)]


@fixture("attnres.module_alive", "fidelity.oracles.block_attnres.stack_forward",
         ["attnres.eq2", "attnres.eq5", "attnres.eq6", "attnres.rmsnorm_gain", "attnres.init_zero_query"])
def _module_alive():
    c = module_case()
    eps = spec_value_exact("attnres.eps")
    base = dict(queries=c["queries"], output_query=c["output_query"], gains=c["gains"], output_gain=c["output_gain"])
    out = lambda p: _run(c, eps=eps, **p)[-1]  # noqa: E731  (h_out [positions, d])
    right = out(base)
    rng = random.Random(SEED + 1)
    directions, changes, rel = {}, {}, {}
    with precision():
        scale = _max_abs(right)
        for inst in alive_instances():
            name, row = (inst.split("[")[0], int(inst.split("[")[1][:-1])) if "[" in inst else (inst, None)
            direction = _direction(rng, ALIVE_SIZE[name])
            moved = {k: [list(r) for r in v] if isinstance(v[0], list) else list(v) for k, v in base.items()}
            if row is None:
                moved[name] = [mp(a) + mp(b) for a, b in zip(base[name], direction)]
            else:
                moved[name][row] = [mp(a) + mp(b) for a, b in zip(base[name][row], direction)]
            change = _max_abs_diff(out(moved), right)
            if change / scale < ALIVE_VISIBLE:
                raise ValueError(f"attnres.module_alive: moving {inst} changes the output by only "
                                 f"{float(change / scale):.3g} of its scale; choose another case")
            directions[inst], changes[inst], rel[inst] = direction, change, float(change / scale)
        first = {k: [list(r) for r in v] if isinstance(v[0], list) else list(v) for k, v in base.items()}
        first["queries"][FIRST_LAYER_ROW] = [mp(a) + 1 for a in base["queries"][FIRST_LAYER_ROW]]
        first_row_change = _max_abs_diff(out(first), right)
        if first_row_change != 0:
            raise ValueError("attnres.module_alive: layer 1's query moved the oracle's output; Eq. 6 says it cannot")
    return {
        "derivation": [
            "The module case of attnres.module_defaults (L = 5 affine sublayers, N = 2, d = 4, two positions) with a "
            "learned gain and every parameter at a non-zero base: queries, output_query as drawn, gains and "
            "output_gain = 1 +- k/8 (at zero queries a gain has no effect: q . (g v) = 0).",
            "eps = " + _show(eps) + " (attnres.eps), convention 'paper', passed explicitly.",
            "For each instance (one sublayer's row of queries or gains, output_query, output_gain) the parameter moves "
            "by a direction whose entries are +-1/4 (signs from random.Random(" + str(SEED + 1) + ")),",
            "and the oracle's max |h_out(base + direction) - h_out(base)| over both positions is stored: "
            + ", ".join(f"{k} {f10(v)}" for k, v in changes.items()) + ".",
            "A parameter the forward never reads moves nothing (ratio 0); a live one about 1.",
            "Row 0 of queries and gains (layer 1) is left out: layer 1 attends b_0 alone, a one-source softmax is 1, "
            "so the oracle's change is exactly 0 (checked: " + f10(first_row_change) + ").",
        ],
        "inputs": {k: inp(c[k]) for k in ("h1", "W", "c", "queries", "output_query", "gains", "output_gain")}
        | {"num_blocks": N, "directions": {k: inp(v) for k, v in directions.items()}},
        "expected": {"out": num(right), "change": {k: num(v) for k, v in changes.items()}},
        "params": {"eps": inp(str(eps)), "convention": "paper", "learned_gain": True, "size": dict(ALIVE_SIZE),
                   "relative_change": {k: round(v, 6) for k, v in rel.items()}},
    }


JACOBIAN_WRT = ("h1", "queries", "output_query", "gains", "output_gain")
"""The tensors whose Jacobian attnres.module_jacobian stores: the input and every parameter (learned gain)."""


@fixture("attnres.module_jacobian", "fidelity.oracles.derivatives.jacobian_at_dps",
         ["attnres.eq2", "attnres.eq5", "attnres.eq6", "attnres.rmsnorm_gain"])
def _module_jacobian():
    c = module_case()
    eps = spec_value_exact("attnres.eps")
    base = {k: c[k] for k in JACOBIAN_WRT}
    expected, lines = {}, []
    for name in JACOBIAN_WRT:
        shape = shape_of(base[name])

        def h_out(flat, name=name, shape=shape):
            moved = dict(base, **{name: unflatten(flat, shape)})
            run = dict(c, h1=moved["h1"])
            return flatten(_run(run, eps=eps, queries=moved["queries"], output_query=moved["output_query"],
                                gains=moved["gains"], output_gain=moved["output_gain"])[-1])

        J = jacobian_at_dps(h_out, flatten(base[name]))
        expected[f"d_out_d_{name}"] = num([unflatten(row, shape) for row in J])
        with precision():
            lines.append(f"max|d h_out / d {name}| = {f10(max(abs(v) for row in J for v in row))}.")
    return {
        "derivation": [
            "The module case of attnres.module_alive (L = 5 affine sublayers f_l(h) = W_l h + c_l, N = 2 blocks, d = 4, "
            "two positions, learned gains, every parameter at its non-zero base), eps = " + _show(eps)
            + " (attnres.eps, the module's default), convention 'paper' (the default).",
            "expected.d_out_d_<p>[k] = d h_out[k] / d p, h_out flattened row-major to [positions * d], each row shaped "
            "like p: central differences of the oracle (fidelity.oracles.block_attnres.stack_forward, 60 digits) with "
            "step 1e-20 (fidelity.oracles.derivatives.jacobian_at_dps: error ~1e-40, ~38 good digits).",
            "Row 0 of d_out_d_queries and d_out_d_gains is 0 up to that error: layer 1 attends b_0 alone (Eq. 6).",
        ] + lines,
        "inputs": {k: inp(c[k]) for k in ("h1", "W", "c", "queries", "output_query", "gains", "output_gain")}
        | {"num_blocks": N},
        "expected": expected,
        "params": {"eps": inp(str(eps)), "convention": "paper", "learned_gain": True,
                   "jacobian_layout": "[positions * d (h_out row-major), *shape of the tensor]"},
    }


DEPTH_MODULE_CASE = {
    "sources": [["1/512", "-1/1024", "1/1024", 0], [0, "1/512", "1/1024", "-1/512"],
                ["-1/1024", "1/1024", "-1/1024", "3/1024"]],
    "query": [1, "-1/2", "1/4", "1/2"],
}
"""The DepthAttention class's defaults case: L = 3 sources of width d = 4 with mean(v^2) = 1.4e-6 .. 2.9e-6,
beside the default eps and above it (so a default of -eps still leaves every root real), and a pseudo-query
giving three unequal weights. Every entry is a dyadic rational (exact in float32)."""

DEPTH_MODULE_WRONG_EPS = ("0", "1e-8", "1e-7", "1e-5", "1e-4", "1")
"""Wrong eps defaults of the DepthAttention class (with -eps, added by the builder): none, the neighbouring
decades, and fidelity discover's 1e-5, 1e-7, 0, 1.0 and -1e-6."""


@fixture("attnres.depth_module_defaults", "fidelity.oracles.depth_attention.depth_attention",
         ["attnres.eps", "attnres.score_conventions", "attnres.eq2", "attnres.eq4", "attnres.init_zero_query"])
def _depth_module_defaults():
    c = DEPTH_MODULE_CASE
    eps = spec_value_exact("attnres.eps")
    d, n_sources = len(c["query"]), len(c["sources"])
    with precision():
        key_ms = [mpmath.fsum(mp(x) ** 2 for x in v) / d for v in c["sources"]]
    if min(key_ms) <= mp(eps):
        raise ValueError("attnres.depth_module_defaults: a source's mean(v^2) is not above eps; -eps would leave "
                         "its root without a real value")
    res = da.depth_attention(c["sources"], c["query"], eps, "paper")
    init = da.depth_attention(c["sources"], [0] * d, eps, "paper")  # the pseudo-query's zero init (attnres.s5)
    right = list(res["alpha"]) + list(res["h"])
    preds, seps = {}, {}
    for name, (e, cv) in ([(f"eps_{float(w):g}", (w, "paper")) for w in DEPTH_MODULE_WRONG_EPS]
                          + [(f"eps_{float(-eps):g}", (-eps, "paper"))]
                          + [(f"convention_{cv}", (eps, cv)) for cv in WRONG_CONVENTIONS]):
        r = da.depth_attention(c["sources"], c["query"], e, cv)
        wrong = list(r["alpha"]) + list(r["h"])
        # the gate judges [alpha, h] entrywise, each entry relative to itself (no entry is 0)
        with precision():
            rel = max(abs(mp(a) - mp(b)) / abs(mp(b)) for a, b in zip(wrong, right))
        seps[name] = float(rel) / DEPTH_GATE_RTOL["float32"]
        if seps[name] < SEPARATION_MIN:
            raise ValueError(f"attnres.depth_module_defaults: wrong default {name} only {seps[name]:.3g} "
                             "tolerances away")
        preds[f"depth_module_defaults.{name}"] = {
            "description": f"DepthAttention's default eps = {float(e):g}, convention {cv!r} in place of the spec's",
            "field": "alpha_and_h", **num(wrong)}
    return {
        "derivation": [
            "DepthAttention(d) built with no optional argument: eps = " + _show(eps) + " (attnres.eps value), "
            "convention 'paper' (attnres.score_conventions: the default), no learned gain (g = 1).",
            f"d = {d}, L = {n_sources} sources (dyadic rationals, /1024); mean(v_i^2) = "
            + ", ".join(f10(v) for v in key_ms) + ": beside eps and above it (so -eps keeps every root real).",
            "At the pseudo-query's zero init (attnres.init_zero_query) every score is 0: alpha = 1/3 each and h is "
            "the mean of the sources, whatever eps and the convention (expected.alpha_at_init, h_at_init).",
            "The gate then writes query = [1, -1/2, 1/4, 1/2]: s_i = q . v_i / sqrt(mean(v_i^2) + eps) = "
            + ", ".join(f10(s) for s in res["scores"]) + "; alpha = softmax(s) = "
            + ", ".join(f10(a) for a in res["alpha"]) + "; h = sum_i alpha_i v_i.",
            "expected.alpha_and_h = [alpha_0, alpha_1, alpha_2, h_0, .., h_3] (no entry is 0).",
            "Every wrong default (eps " + ", ".join(DEPTH_MODULE_WRONG_EPS) + ", -eps; conventions "
            + ", ".join(WRONG_CONVENTIONS) + ") is >= " + f"{min(seps.values()):.3g}"
            + " float32 gate tolerances (32 eps, entrywise relative) away: see predictions.",
        ],
        "inputs": {"sources": inp(c["sources"]), "query": inp(c["query"])},
        "expected": {"alpha_and_h": num(right), "scores": num(res["scores"]),
                     "alpha_at_init": num(init["alpha"]), "h_at_init": num(init["h"])},
        "params": {"eps": inp(str(eps)), "eps_from": "attnres.eps", "convention": "paper",
                   "convention_from": "attnres.score_conventions", "learned_gain": False,
                   "separation_in_tolerances": {k: round(v, 3) for k, v in seps.items()},
                   "tolerance_checked": "32 eps(float32) relative to each entry of alpha_and_h"},
        "predictions": preds,
    }


STABILITY_SCALE = 1024
"""The factor on the module case's queries for the stability case: a power of two (the scaled queries stay
dyadic, exact in float32), large enough that the inter-block scores of block 2 spread past float64's exp
overflow (~709.8) at both positions."""

EXP_OVERFLOW = {"float32": math.log(3.4028234663852886e38), "float64": math.log(1.7976931348623157e308)}
"""ln of the largest finite float: e^x overflows beyond it (88.72 in float32, 709.78 in float64)."""


def _source_values(h1, run: dict, composition: dict, labels: list[str]) -> list:
    """The Eq. 6 source vectors of one layer, by label: b_0 = h1, a (partial) block the sum of its sublayers' y."""
    with precision():
        out = []
        for lab in labels:
            comp = composition[lab]
            if comp == ["h1"]:
                out.append([mp(x) for x in h1])
            else:
                out.append([mpmath.fsum(run["y"][int(f[1:]) - 1][j] for f in comp) for j in range(D)])
        return out


def _layer_mixes(c: dict, eps, queries) -> tuple[list, list[dict]]:
    """Per position the oracle's stack run, and per layer (source_sets order) its depth_mix at every position."""
    sets = ba.source_sets(L, N)
    runs = [ba.stack_forward(h, _sublayers(c), N, queries, c["output_query"], eps, "paper", c["gains"],
                             c["output_gain"]) for h in c["h1"]]
    mixes = []
    for e in sets:
        per_pos = []
        for h, run in zip(c["h1"], runs):
            vals = _source_values(h, run, e["composition"], e["sources"])
            mix = ba.depth_mix(vals, queries[e["layer"] - 1], eps, "paper", c["gains"][e["layer"] - 1])
            with precision():
                if _max_abs_diff(mix["h"], run["h"][e["layer"] - 1]) != 0:
                    raise ValueError(f"attnres.module_trace: layer {e['layer']}'s rebuilt sources do not give the "
                                     "oracle's h_l")
            per_pos.append(mix)
        mixes.append(per_pos)
    return runs, mixes


@fixture("attnres.module_trace", "fidelity.oracles.block_attnres.depth_mix",
         ["attnres.eq2", "attnres.eq5", "attnres.eq6", "attnres.alg1", "attnres.rmsnorm_gain"])
def _module_trace():
    c = module_case()
    eps = spec_value_exact("attnres.eps")
    sets = ba.source_sets(L, N)
    runs, mixes = _layer_mixes(c, eps, c["queries"])
    alpha = {f"alpha_layer_{e['layer']}": num([[m["alpha"][k] for m in per_pos] for k in range(len(e["sources"]))])
             for e, per_pos in zip(sets, mixes)}
    big = [[str(Fraction(q) * STABILITY_SCALE) for q in row] for row in c["queries"]]
    big_runs, big_mixes = _layer_mixes(c, eps, big)
    spreads, gaps = [], []
    with precision():
        for e, per_pos in zip(sets, big_mixes):
            for m in per_pos:
                s = sorted(m["scores"], reverse=True)
                if len(s) > 1:
                    gaps.append(s[0] - s[1])
                inter = m["scores"][:e["block"]]  # [b_0 .. b_{n-1}]: what Alg. 1's phase 1 scores together
                if len(inter) > 1:
                    spreads.append(max(inter) - min(inter))
        min_gap, max_spread = min(gaps), max(spreads)
        spread_per_position = [max(max(m["scores"][:e["block"]]) - min(m["scores"][:e["block"]])
                                   for e, per_pos in zip(sets, big_mixes) if e["block"] > 1 for m in [per_pos[p]])
                               for p in range(len(c["h1"]))]
    if min(spread_per_position) <= EXP_OVERFLOW["float64"]:
        raise ValueError(f"attnres.module_trace: the stability case's phase-1 spread {float(min(spread_per_position)):.4g} "
                         f"does not pass float64's exp overflow {EXP_OVERFLOW['float64']:.4g} at every position")
    stability_out = [r["out"] for r in big_runs]
    return {
        "derivation": [
            "The module case of attnres.module_alive (L = 5 affine sublayers f_l(h) = W_l h + c_l in N = 2 blocks "
            "[1, 2, 3], [4, 5], d = 4, two positions, learned gains, every parameter at its non-zero base), eps = "
            + _show(eps) + " (attnres.eps), convention 'paper'.",
            "Per layer l (fidelity.oracles.block_attnres.source_sets order) its Eq. 6 sources are rebuilt from the "
            "oracle's stack run (stack_forward: b_0 = h1, a block's (partial) sum = the sum of its sublayers' y) and "
            "depth_mix(sources, queries[l-1], eps, 'paper', gains[l-1]) gives alpha; its h equals stack_forward's h_l "
            "exactly (checked).",
            "expected.alpha_layer_<l> = alpha [sources, positions] (the layout of the module's trace). Layer 1 "
            "attends b_0 alone: alpha = 1.",
            "Stability case: the same case with queries x " + str(STABILITY_SCALE) + " (inputs.stability_queries, "
            "dyadic). Every aggregation's top score gap is >= " + f10(min_gap) + " (alpha one-hot to e^-gap), and "
            "block 2's inter-block scores [b_0, b_1] (Alg. 1's phase 1) spread by " + ", ".join(
                f10(s) for s in spread_per_position) + " at the two positions (max " + f10(max_spread) + "): beyond "
            f"ln(max float) = {EXP_OVERFLOW['float32']:.4g} (float32) and {EXP_OVERFLOW['float64']:.4g} (float64), "
            "so e^(s - min s) overflows; e^(s - max s) cannot (Alg. 1 subtracts the max).",
            "expected.stability_out = h_out [positions, d] of the oracle at the stability queries (stack_forward).",
        ],
        "inputs": {k: inp(c[k]) for k in ("h1", "W", "c", "queries", "output_query", "gains", "output_gain")}
        | {"num_blocks": N, "stability_queries": inp(big)},
        "expected": alpha | {"stability_out": num(stability_out)},
        "params": {"eps": inp(str(eps)), "convention": "paper", "learned_gain": True,
                   "stability_scale": STABILITY_SCALE,
                   "stability_min_top_gap": float(min_gap),
                   "stability_phase1_spread": [float(s) for s in spread_per_position],
                   "exp_overflow": dict(EXP_OVERFLOW)},
    }
