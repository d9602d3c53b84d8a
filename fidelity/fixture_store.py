"""Fixtures: named inputs with oracle-computed expected outputs, one JSON file per fixture.

Every fixture is built by a registered builder that calls the oracles in
`fidelity.oracles`; nothing in a fixture is typed in by hand. The files are
`fixtures/<id>.json`, serialised with `json.dumps(obj, indent=1,
sort_keys=True) + "\\n"` so regenerating is byte-identical.

File format (all keys required):
    id                the fixture id, equal to the file stem
    oracle            dotted path of the oracle function that computes it
    equations         spec equation ids it feeds (e.g. "mhc.eq3")
    derivation        lines of plain words and arithmetic a person can check by hand
    inputs            exact values: JSON numbers where a double holds them exactly, else
                      {"exact": nested strings/numbers, "float64": nested doubles}
    expected          name -> {"digits": nested decimal strings (40 significant digits),
                               "float64": the same shape, each the double nearest its digits}
                      or name -> {"exact": structure} for structural facts
    params            eps, t_max and the like
    precision_digits  significant digits of every "digits" string
    predictions       name -> predicted red reading of a named perturbation
                      ({"description", "field", "digits", "float64"}); {} if none

API: `regenerate(directory) -> [Path]`, `verify(directory) -> [Drift]`,
`load(fixture_id, directory) -> dict`; errors are `FixtureError(file, field, message)`.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import mpmath
import sympy

from fidelity.oracles import block_attnres as ba
from fidelity.oracles import cases
from fidelity.oracles import depth_attention as da
from fidelity.oracles import hc
from fidelity.oracles import mhc
from fidelity.oracles import predictions as pr
from fidelity.oracles import sinkhorn as sk
from fidelity.oracles._precision import DIGITS, digits, exact, mp, precision, twin
from fidelity.oracles.rmsnorm import rms, rmsnorm
from fidelity.spec.values import spec_value_exact

REQUIRED_FIELDS = ("id", "oracle", "equations", "derivation", "inputs", "expected", "params",
                   "precision_digits", "predictions")


class FixtureError(Exception):
    """A fixture file that cannot be used: invalid JSON, a missing or unexpected field, an unknown id."""

    def __init__(self, file: Path | str, field: str | None, message: str):
        self.file = Path(file)
        self.field = field
        self.message = message
        where = f"{self.file}" + (f" [{field}]" if field else "")
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Drift:
    """A stored value that differs from what the oracle recomputes now."""

    file: Path
    fixture_id: str
    field: str
    stored: Any
    recomputed: Any

    def __str__(self) -> str:
        return (f"{self.file.name} ({self.fixture_id}) {self.field}: stored {self.stored!r}, "
                f"recomputed {self.recomputed!r}")

    def to_json(self) -> dict:
        return {"file": str(self.file), "fixture": self.fixture_id, "field": self.field,
                "stored": self.stored, "recomputed": self.recomputed}


@dataclass(frozen=True)
class FixtureSpec:
    id: str
    oracle: str
    equations: tuple[str, ...]
    build: Callable[[], dict]
    module: str  # the module that registered it: a project owns the fixtures of its fixture_builders


FIXTURES: dict[str, FixtureSpec] = {}


def fixture(fixture_id: str, oracle: str, equations: list[str]):
    """Register a builder returning {"derivation", "inputs", "expected", "params"[, "predictions"]}."""
    def register(fn):
        if fixture_id in FIXTURES:
            raise ValueError(f"fixture {fixture_id!r} registered twice")
        FIXTURES[fixture_id] = FixtureSpec(fixture_id, oracle, tuple(equations), fn, fn.__module__)
        return fn
    return register


# ---- encoding helpers ---------------------------------------------------------------------------

def _map(fn, value):
    if isinstance(value, (list, tuple)):
        return [_map(fn, v) for v in value]
    return fn(value)


def num(value) -> dict:
    """A computed value (nested lists of sympy/mpf) as {"digits", "float64"}."""
    d = _map(digits, value)
    return {"digits": d, "float64": _map(twin, d)}


def exact_structure(value) -> dict:
    return {"exact": value}


def _representable(e: sympy.Expr) -> bool:
    if not e.is_Rational:
        return False
    q = int(e.q)
    return q & (q - 1) == 0 and abs(int(e.p)) < 2**53


def _leaf_json(v):
    e = exact(v)
    if _representable(e):
        return int(e) if e.is_Integer else float(e)
    if isinstance(v, str):
        return v
    return str(e)


def inp(value):
    """An input (nested ints / strings / sympy): plain JSON numbers if every leaf is exact in float64."""
    leaves = []
    _map(leaves.append, value)
    if all(_representable(exact(v)) for v in leaves):
        return _map(_leaf_json, value)
    with precision():
        return {"exact": _map(_leaf_json, value), "float64": _map(lambda v: twin(digits(exact(v))), value)}


def f10(x) -> str:
    """A value to 10 significant digits, for derivation text."""
    with precision():
        return mpmath.nstr(mp(x), 10)


def _mpn(value):
    with precision():
        return _map(mp, value)


def _prediction(name: str) -> dict:
    p = pr.PREDICTIONS[name]
    value = p.fn()
    if isinstance(value, dict):
        entry = {k: num(v) for k, v in value.items()}
        return {"description": " ".join(p.description.split()), "field": p.field, "values": entry}
    return {"description": " ".join(p.description.split()), "field": p.field, **num(value)}


def _predictions(*names: str) -> dict:
    return {name: _prediction(name) for name in names}


def _sk_params(t_max=sk.T_MAX) -> dict:
    return {"t_max": t_max, "order": "column normalisation first, then row (Eq. 9)"}


# ---- RMSNorm -----------------------------------------------------------------------------------

@fixture("rmsnorm.example", "fidelity.oracles.rmsnorm.rmsnorm", ["rmsnorm.mean_form"])
def _rmsnorm_example():
    c = cases.RMSNORM_EXAMPLE
    r = rms(c["x"], c["eps"])
    y = rmsnorm(c["x"], c["eps"])
    return {
        "derivation": [
            "RMSNorm, mean form, eps = 0 (the paper's formula) and gain 1: y = x / sqrt(mean(x^2)).",
            "x^2 = [100, 400, 900, 1600], mean = 3000/4 = 750, rms = sqrt(750) = 5 sqrt(30) = " + f10(r) + ".",
            "y = x / (5 sqrt(30)) = [2, 4, 6, 8] / sqrt(30) = [" + ", ".join(f10(v) for v in y) + "].",
            "Check: mean(y^2) = (4 + 16 + 36 + 64) / 30 / 4 = 1.",
        ],
        "inputs": {"x": inp(c["x"])},
        "expected": {"rms": num(r), "y": num(y)},
        "params": {"eps": 0, "gain": "ones"},
    }


@fixture("rmsnorm.eps_sensitive", "fidelity.oracles.rmsnorm.rmsnorm", ["rmsnorm.mean_form"])
def _rmsnorm_eps():
    c = cases.RMSNORM_EPS
    r = rms(c["x"], c["eps"])
    y = rmsnorm(c["x"], c["eps"], c["g"])
    return {
        "derivation": [
            "RMSNorm, mean form, eps inside the root, learned gain g: y = x / sqrt(mean(x^2) + eps) * g.",
            "x = [1, -2, 3, -4] / 1000, mean(x^2) = 30e-6 / 4 = 7.5e-6, comparable to eps = 1e-5,",
            "so where eps sits is visible: sqrt(7.5e-6 + 1e-5) = sqrt(1.75e-5) = " + f10(r) + ".",
            "y = x * g / " + f10(r) + " with g = [1, 1/2, 2, -1] = [" + ", ".join(f10(v) for v in y) + "].",
            "eps outside the root (the RMSNorm authors' torch code) divides by sqrt(7.5e-6) + 1e-5 instead: "
            "see predictions.",
        ],
        "inputs": {"x": inp(c["x"]), "g": inp(c["g"]), "eps": inp(c["eps"])},
        "expected": {"rms": num(r), "y": num(y)},
        "params": {"eps": inp(c["eps"])},
        "predictions": _predictions("rmsnorm.eps_outside"),
    }


RMSNORM_MODULE_GATE_RTOL = 8 * 2.0 ** -23
"""The relative tolerance of tests/gates/test_rmsnorm_module_contract.py's defaults gate: 8 eps(float32)
(as the mean-form gate); every wrong default is checked against it, the weaker of its two dtypes."""

RMSNORM_WRONG_EPS = ("0", "1e-8", "1e-7", "1e-5", "1")
"""Plausible wrong defaults of RMSNorm's eps: none, the authors' torch 1e-8, the neighbouring decades, 1;
the builder adds the right value with its sign flipped."""


@fixture("rmsnorm.module_defaults", "fidelity.oracles.rmsnorm.rmsnorm", ["rmsnorm.mean_form", "rmsnorm.gain",
                                                                          "attnres.eps"])
def _rmsnorm_module_defaults():
    c = cases.RMSNORM_EPS
    eps = spec_value_exact("attnres.eps")
    y = rmsnorm(c["x"], eps)  # gain ones: the module's init (rmsnorm.gain)
    preds, seps = {}, {}
    for e in [exact(w) for w in RMSNORM_WRONG_EPS] + [-eps]:
        wrong = rmsnorm(c["x"], e)
        with precision():
            rel = max(abs(mp(a) - mp(b)) / abs(mp(b)) for a, b in zip(wrong, y))
        name = f"eps_{float(e):g}"
        seps[name] = float(rel) / RMSNORM_MODULE_GATE_RTOL
        if seps[name] < 10.0:
            raise ValueError(f"rmsnorm.module_defaults: wrong default {name} only {seps[name]:.3g} tolerances away")
        preds[f"module_defaults.{name}"] = {"description": f"RMSNorm's default eps = {float(e):g} in place of the "
                                                           "spec's (attnres.eps)", "field": "y", **num(wrong)}
    return {
        "derivation": [
            "RMSNorm(d) built with no optional argument: eps = " + f"{float(eps):g}" + " (attnres.eps value), "
            "gain ones (its init, rmsnorm.gain): y = x / sqrt(mean(x^2) + eps).",
            "x = [1, -2, 3, -4] / 1000 (as rmsnorm.eps_sensitive), mean(x^2) = 7.5e-6, beside eps,",
            "so sqrt(7.5e-6 + " + f"{float(eps):g}" + ") = " + f10(rms(c["x"], eps)) + " and y = x / that = ["
            + ", ".join(f10(v) for v in y) + "].",
            "Every wrong default (eps " + ", ".join(RMSNORM_WRONG_EPS) + ", and -eps) is >= "
            + f"{min(seps.values()):.3g}" + " float32 gate tolerances (8 eps) away: see predictions.",
        ],
        "inputs": {"x": inp(c["x"])},
        "expected": {"rms": num(rms(c["x"], eps)), "y": num(y)},
        "params": {"eps": inp(str(eps)), "eps_from": "attnres.eps", "gain": "ones (the module's init)",
                   "separation_in_tolerances": {k: round(v, 3) for k, v in seps.items()},
                   "tolerance_checked": "8 eps(float32) relative to each y entry"},
        "predictions": preds,
    }


# ---- AttnRes -----------------------------------------------------------------------------------

@fixture("attnres.three_conventions", "fidelity.oracles.depth_attention.depth_attention",
         ["attnres.eq2", "attnres.eq3", "attnres.eq4", "attnres.phi"])
def _attnres_three():
    c = cases.ATTNRES_FIXTURE
    res = {conv: da.depth_attention(c["sources"], c["query"], c["eps"], conv) for conv in da.CONVENTIONS}
    p, l2, l2d = (res[k]["scores"][0] for k in ("paper", "l2", "l2_sqrt_d"))
    return {
        "derivation": [
            "B = T = 1, d = 4, L = 2 sources h0 = e0, h1 = e1 (values), query w = 2 e0, eps = 1e-5.",
            "Only source 0 has a non-zero dot product with w: q . h0 = 2, q . h1 = 0, so score1 = 0 in every convention.",
            "paper: mean(h0^2) = 1/4, score0 = 2 / sqrt(1/4 + 1e-5) = 4 / sqrt(1 + 4e-5) = " + f10(p)
            + " (eps inside the root makes it SMALLER than 4).",
            "l2: sum(h0^2) = 1, score0 = 2 / sqrt(1 + 1e-5) = " + f10(l2) + ".",
            "l2_sqrt_d: score0 = 2 / sqrt(1 + 1e-5) / sqrt(4) = " + f10(l2d) + ".",
            "alpha0 = e^score0 / (e^score0 + e^0) = 1 / (1 + e^-score0): paper " + f10(res["paper"]["alpha"][0])
            + ", l2 " + f10(res["l2"]["alpha"][0]) + ", l2_sqrt_d " + f10(res["l2_sqrt_d"]["alpha"][0]) + ".",
            "h = alpha0 e0 + alpha1 e1, so out[0] = alpha0 and out[1] = alpha1 = 1 - alpha0.",
        ],
        "inputs": {"sources": inp(c["sources"]), "query": inp(c["query"]), "eps": inp(c["eps"])},
        "expected": {conv: {"scores": num(r["scores"]), "alpha": num(r["alpha"]), "h": num(r["h"])}
                     for conv, r in res.items()},
        "params": {"eps": inp(c["eps"]), "conventions": list(da.CONVENTIONS), "gain": "ones"},
        "predictions": _predictions("attnres.fixture.temperature", "attnres.fixture.l2_norm"),
    }


@fixture("attnres.default_eps", "fidelity.oracles.depth_attention.depth_attention", ["attnres.eps", "attnres.eq2"])
def _attnres_default_eps():
    c = cases.ATTNRES_DEFAULT_EPS
    r = da.depth_attention(c["sources"], c["query"], c["eps"], "paper")
    return {
        "derivation": [
            "The paper score at our default eps = 1e-6 (attnres.eps), d = 4, L = 2: h0 = e0 / 1000, h1 = e1 / 500,",
            "query w = 2 e0. mean(h0^2) = 1e-6 / 4 = 2.5e-7, the same order as eps, so where eps sits and its value show.",
            "score0 = 2 / 1000 / sqrt(2.5e-7 + 1e-6) = 0.002 / sqrt(1.25e-6) = " + f10(r["scores"][0])
            + "; score1 = 0 (w . h1 = 0).",
            "alpha0 = 1 / (1 + e^-score0) = " + f10(r["alpha"][0]) + " (at eps = 1e-5 it would be about 0.651).",
        ],
        "inputs": {"sources": inp(c["sources"]), "query": inp(c["query"])},
        "expected": {"scores": num(r["scores"]), "alpha": num(r["alpha"]), "h": num(r["h"])},
        "params": {"eps": inp(c["eps"]), "convention": "paper", "gain": "ones"},
    }


@fixture("attnres.zero_query", "fidelity.oracles.depth_attention.depth_attention",
         ["attnres.init_zero_query", "attnres.eq2", "attnres.eq4"])
def _attnres_zero():
    c = cases.ATTNRES_ZERO_QUERY
    res = {conv: da.depth_attention(c["sources"], c["query"], c["eps"], conv) for conv in da.CONVENTIONS}
    mean = [sum(exact(v[j]) for v in c["sources"]) / len(c["sources"]) for j in range(len(c["query"]))]
    return {
        "derivation": [
            "The paper's init: every pseudo-query is zero. Then every score is 0 . k_i = 0, whatever the",
            "sources and the convention, so alpha_i = e^0 / (3 e^0) = 1/3 and h is the plain mean of the",
            "three sources: [1+4-3, -2+0+1, 3-1+1, 0+2+1] / 3 = [2, -1, 3, 3] / 3 = ["
            + ", ".join(f10(v) for v in mean) + "].",
        ],
        "inputs": {"sources": inp(c["sources"]), "query": inp(c["query"]), "eps": inp(c["eps"])},
        "expected": {conv: {"scores": num(r["scores"]), "alpha": num(r["alpha"]), "h": num(r["h"])}
                     for conv, r in res.items()},
        "params": {"eps": inp(c["eps"]), "conventions": list(da.CONVENTIONS)},
    }


@fixture("attnres.general", "fidelity.oracles.depth_attention.depth_attention",
         ["attnres.eq1", "attnres.eq2", "attnres.eq3", "attnres.eq4", "attnres.phi"])
def _attnres_general():
    c = cases.ATTNRES_GENERAL
    res = {conv: da.depth_attention(c["sources"], c["query"], c["eps"], conv, c["gain"]) for conv in da.CONVENTIONS}
    grads = {conv: da.gradients(c["sources"], c["query"], c["eps"], conv, c["gain"], c["loss_weights"])
             for conv in da.CONVENTIONS}
    v0 = [exact(x) for x in c["sources"][0]]
    r0 = sympy.sqrt(sum(x**2 for x in v0) / 3 + exact(c["eps"]))
    return {
        "derivation": [
            "d = 3, L = 4 sources, query q = [1/2, -1, 1/4], RMSNorm gain g = [1, 2, 1/2], eps = 1e-6.",
            "Keys k_i = v_i / sqrt(mean(v_i^2) + eps) * g (paper); scores s_i = q . k_i; one softmax over the 4 sources.",
            "Source 0 by hand: v0 = [1, 2, -1], mean(v0^2) = 2, rms = sqrt(2 + 1e-6) = " + f10(r0)
            + "; q . (v0 * g) = 1/2 - 4 - 1/4 = -3.75; s0 = -3.75 / rms = " + f10(res["paper"]["scores"][0]) + ".",
            "l2 divides by sqrt(sum(v^2) + eps) = sqrt(6 + 1e-6) instead; l2_sqrt_d further by sqrt(3).",
            "Gradients: loss = c . h with c = [1, -2, 1/2]; ds_i/dv_ij = t (q_j g_j / r_i - m v_ij (q . v_i g) / r_i^3)",
            "with m = 1/d (paper) or 1 (l2 forms): the m is the factor a hand-written backward can drop unseen under l2.",
        ],
        "inputs": {k: inp(c[k]) for k in ("sources", "query", "gain", "eps", "loss_weights")},
        "expected": {conv: {"scores": num(res[conv]["scores"]), "alpha": num(res[conv]["alpha"]),
                            "h": num(res[conv]["h"]),
                            "dscore_dsource": num(grads[conv]["dscore_dsource"]),
                            "dloss_dsource": num(grads[conv]["dloss_dsource"]),
                            "dloss_dquery": num(grads[conv]["dloss_dquery"])}
                     for conv in da.CONVENTIONS},
        "params": {"eps": inp(c["eps"]), "conventions": list(da.CONVENTIONS), "loss": "sum_j c_j h_j"},
    }


@fixture("attnres.block_sources", "fidelity.oracles.block_attnres.source_sets", ["attnres.eq5", "attnres.eq6"])
def _attnres_blocks():
    layouts = {f"L{L}_N{N}": ba.source_sets(L, N) for L, N in ba.LAYOUTS}
    parts = {f"L{L}_N{N}": ba.block_partition(L, N) for L, N in ba.LAYOUTS}
    return {
        "derivation": [
            "Block size S = ceil(L/N); blocks are filled in order and the last holds the remainder.",
            "(7,3): S = 3, blocks [1,2,3], [4,5,6], [7]. (8,3): [1,2,3], [4,5,6], [7,8]. (5,2): [1,2,3], [4,5].",
            "b0 = h1 (the embedding) is always its own source. Layer i of block n attends b0..b_{n-1}, plus",
            "b_n^{i-1} (the sum of the block's first i-1 layer outputs) when i >= 2.",
            "Example (6,2), layer 5 = block 2, i = 2: [b0, b1, b2^1] with b1 = f1+f2+f3 and b2^1 = f4.",
            "(4,4) is Full AttnRes (layer l attends h1, f1..f_{l-1}); (4,1) is the plain residual with b0 isolated.",
        ],
        "inputs": {"layouts": [[L, N] for L, N in ba.LAYOUTS]},
        "expected": {"blocks": exact_structure(parts), "layers": exact_structure(layouts)},
        "params": {"block_size": "ceil(L/N), last block holds the remainder"},
    }


@fixture("attnres.alg1_merge", "fidelity.oracles.block_attnres.two_phase_block",
         ["attnres.alg1", "attnres.eq5", "attnres.eq6", "attnres.phi"])
def _attnres_alg1():
    c = cases.ALG1
    steps = ba.two_phase_block(c["inter_sources"], c["layer_outputs"], c["queries"], c["eps"])
    exp = {}
    for s in steps:
        key = f"step{s['i']}"
        e = {"h": num(s["h"]), "m": num(s["m"]), "phase1_m": num(s["phase1"]["m"]), "phase1_l": num(s["phase1"]["l"]),
             "phase1_o": num(s["phase1"]["o"]), "phase1_scores": num(s["phase1"]["scores"]),
             "partial": num(s["partial"])}
        if s["phase2"] is not None:
            e.update({"phase2_m": num(s["phase2"]["m"]), "phase2_l": num(s["phase2"]["l"]),
                      "phase2_o": num(s["phase2"]["o"])})
        exp[key] = e
    s1, s2 = steps[1], steps[2]
    return {
        "derivation": [
            "Block n = 3 of a Block AttnRes stack: inter-block sources b0 (embedding), b1, b2; S = 3 layers; d = 4.",
            "The layer outputs f are GIVEN (not computed), so each step is checkable alone: b3^0 = 0, b3^1 = f1, "
            "b3^2 = f1 + f2.",
            "Scores use the paper convention: s = w . v / sqrt(mean(v^2) + eps), eps = 1e-6.",
            "Phase 1 per layer: m1 = max_j s_j over b0..b2, l1 = sum_j e^{s_j - m1}, o1 = sum_j e^{s_j - m1} b_j "
            "(un-normalised).",
            "Step 0: h = o1 / l1 (inter-block only). Step i >= 1: phase 2 on b3^i alone gives m2 = s, l2 = 1, o2 = b3^i;",
            "m = max(m1, m2), h = (e^{m1-m} o1 + e^{m2-m} o2) / (e^{m1-m} l1 + e^{m2-m} l2).",
            "Step 1: m1 = " + f10(s1["phase1"]["m"]) + " < m2 = " + f10(s1["phase2"]["m"])
            + " (the intra-block source wins); step 2: m1 = " + f10(s2["phase1"]["m"]) + " > m2 = "
            + f10(s2["phase2"]["m"]) + " (the other branch of the max).",
            "Every h equals the joint softmax over [b0, b1, b2, b3^i] (checked by the tests).",
        ],
        "inputs": {k: inp(c[k]) for k in ("inter_sources", "layer_outputs", "queries", "eps")},
        "expected": exp,
        "params": {"eps": inp(c["eps"]), "convention": "paper", "block": 3, "S": 3},
    }


# ---- Sinkhorn ----------------------------------------------------------------------------------

@fixture("sinkhorn.cross_ratio_2x2", "fidelity.oracles.sinkhorn.sinkhorn", ["mhc.eq9", "mhc.eq6"])
def _sk_2x2():
    logits = cases.SK_2X2["logits"]
    traj = sk.sinkhorn(logits, trajectory=True)
    lim = sk.limit_2x2(logits)
    rho = sk.cross_ratio(sk.exp_matrix(logits))
    p = lim[0, 0]
    return {
        "derivation": [
            "logits [[1, -1/2], [0, 2]]: M(0) = [[e, e^-1/2], [1, e^2]].",
            "Each normalisation multiplies rows or columns by constants, so the cross ratio",
            "rho = M00 M11 / (M01 M10) = e^3 / e^-1/2 = e^(7/2) = " + f10(rho) + " never changes.",
            "A doubly stochastic 2x2 matrix is [[p, 1-p], [1-p, p]] with cross ratio (p/(1-p))^2, so",
            "p = e^(7/4) / (1 + e^(7/4)) = " + f10(p) + ".",
            "Step 1 by hand: column sums e + 1 and e^-1/2 + e^2; then rows are normalised. M(1) = "
            + str([[f10(x) for x in r] for r in traj[1]]) + ".",
        ],
        "inputs": {"logits": inp(logits)},
        "expected": {"trajectory": num(traj[:4]), "M_t_max": num(traj[-1]), "limit": num(lim.tolist()),
                     "cross_ratio": num(rho), "gap_to_limit": num(sk.max_abs_diff(traj[-1], lim.tolist()))},
        "params": _sk_params(),
        "predictions": _predictions("sinkhorn.cross_ratio_2x2.row_first"),
    }


def _sk_exact(case, n):
    logits = sk.scaled_logits(case["A"], case["d1"], case["d2"])
    M = sk.sinkhorn(logits)
    A = [[exact(x) for x in r] for r in case["A"]]
    defects = sk.row_col_defects(M)
    return {
        "derivation": [
            f"A is an {n}x{n} doubly stochastic matrix with rational, positive entries (a convex combination of",
            "permutation matrices); D1 = diag(d1), D2 = diag(d2) positive. logits = log(D1 A D2) entrywise.",
            "Sinkhorn only rescales rows and columns, and a positive matrix has exactly one doubly stochastic",
            "diagonal scaling, so the limit is A itself, exactly.",
            "M(20) approaches it geometrically: max|M(20) - A| = " + f10(sk.max_abs_diff(M, A))
            + ", max|column sum - 1| = " + f10(defects["col"]) + " (rows are exact: the last step is T_r).",
        ],
        "inputs": {"A": inp(case["A"]), "d1": inp(case["d1"]), "d2": inp(case["d2"]), "logits": inp(logits)},
        "expected": {"M_t_max": num(M), "limit": num(A), "gap_to_limit": num(sk.max_abs_diff(M, A)),
                     "col_defect": num(defects["col"])},
        "params": _sk_params(),
    }


@fixture("sinkhorn.exact_limit_n3", "fidelity.oracles.sinkhorn.sinkhorn", ["mhc.eq9", "mhc.eq6"])
def _sk_n3():
    return _sk_exact(cases.SK_N3, 3)


@fixture("sinkhorn.exact_limit_n4", "fidelity.oracles.sinkhorn.sinkhorn", ["mhc.eq9", "mhc.eq6"])
def _sk_n4():
    return _sk_exact(cases.SK_N4, 4)


@fixture("sinkhorn.slow_2x2", "fidelity.oracles.sinkhorn.sinkhorn", ["mhc.eq9"])
def _sk_slow():
    logits = cases.SK_SLOW["logits"]
    traj = sk.sinkhorn(logits, trajectory=True)
    lim = sk.limit_2x2(logits)
    gap = sk.max_abs_diff(traj[-1], lim.tolist())
    return {
        "derivation": [
            "logits [[0, 0], [-12, 0]]: M(0) = [[1, 1], [e^-12, 1]], close to the pattern [[1, 1], [0, 1]]",
            "that has no doubly stochastic scaling (there Sinkhorn's off-diagonal decays only like 1/(2t)),",
            "so convergence is slow until 1/(2t) falls to the limit's e^-6-sized off-diagonal.",
            "Cross ratio rho = e^12, so the limit has p = e^6 / (1 + e^6) = " + f10(lim[0, 0]) + ".",
            "After t_max = 20 steps M(20) = " + str([[f10(x) for x in r] for r in traj[-1]])
            + ", still " + f10(gap) + " from the limit: an implementation must match M(20), not the limit.",
        ],
        "inputs": {"logits": inp(logits)},
        "expected": {"trajectory": num(traj[:4]), "M_t_max": num(traj[-1]), "limit": num(lim.tolist()),
                     "gap_to_limit": num(gap), "col_defect": num(sk.row_col_defects(traj[-1])["col"])},
        "params": _sk_params(),
        "predictions": _predictions("sinkhorn.slow_2x2.row_first"),
    }


@fixture("sinkhorn.extreme_offsets", "fidelity.oracles.sinkhorn.sinkhorn", ["mhc.eq9"])
def _sk_extreme():
    c = cases.SK_EXTREME
    logits = {f"plus{o}" if o > 0 else f"minus{-o}": sk.rank_one_logits(c["a"], c["b"], o) for o in c["offsets"]}
    logits["row_minus400"] = sk.rank_one_logits(c["row_a"], c["row_b"], 0)
    Ms = {k: sk.sinkhorn(v) for k, v in logits.items()}
    J = [[sympy.Rational(1, 3)] * 3 for _ in range(3)]
    return {
        "derivation": [
            "logits_ij = a_i + b_j + offset (a = [0, 1, -1], b = [1/2, 0, 2], offset +200 or -200), and a",
            "third matrix with one row at -400 (a = [0, 0, -400], b = 0). M(0) = exp(logits) has rank one:",
            "M_ij = u_i v_j. The first column normalisation makes every column u / sum(u); the row",
            "normalisation then gives 1/3 everywhere. So M(t) = J/3 exactly for every t >= 1, at any offset.",
            "The predicted readings model a linear-domain Sinkhorn with every sum floored at 1e-7: in exact",
            "arithmetic the floor only delays the +-200 cases (each step is still a diagonal scaling of a",
            "rank-one matrix), with float32's exp range +200 gives nan and -200 gives zeros, and the",
            "-400 row stays below the floor for all 20 steps.",
        ],
        "inputs": {f"logits_{k}": inp(v) for k, v in logits.items()} | {"floor": inp(cases.FLOOR)},
        "expected": {f"M_{k}": num(M) for k, M in Ms.items()} | {"limit": num(J)},
        "params": _sk_params() | {"floor_of_predicted_implementation": inp(cases.FLOOR)},
        "predictions": _predictions("sinkhorn.extreme.floor_linear.plus200", "sinkhorn.extreme.floor_linear.minus200",
                                    "sinkhorn.extreme.floor_linear_f32range.plus200",
                                    "sinkhorn.extreme.floor_linear_f32range.minus200",
                                    "sinkhorn.extreme.floor_linear.row_minus400"),
    }


# ---- mHC ---------------------------------------------------------------------------------------

@fixture("mhc.init_identity", "fidelity.oracles.sinkhorn.constant_diagonal",
         ["mhc.init_static_bias", "mhc.eq9", "mhc.eq6"])
def _mhc_init():
    c = cases.MHC_INIT
    exp = {}
    for n in c["n"]:
        cd = sk.constant_diagonal(n, c["diag"])
        exp[f"n{n}"] = {"diag": num(cd["diag"]), "off": num(cd["off"]), "identity_distance": num(cd["identity_distance"])}
    d2 = sk.constant_diagonal(2, c["diag"])["identity_distance"]
    return {
        "derivation": [
            "b_res = 10 I (our static-bias init): M(0) has e^10 on the diagonal and 1 elsewhere.",
            "Every column sums to e^10 + n - 1, so T_c gives diag = e^10 / (e^10 + n - 1), off = 1 / (e^10 + n - 1);",
            "that matrix is symmetric with row sums 1, so T_r and every later step change nothing: H = M(1) = M(20).",
            "max|H - I| = 1 - diag = (n - 1) / (e^10 + n - 1) (the off-diagonal entries are smaller by n - 1).",
            "n = 2: 1 / (e^10 + 1) = " + f10(d2) + " (e^-10 = " + f10(sympy.exp(-10)) + " is only an approximation).",
        ],
        "inputs": {"b_res_diagonal": c["diag"], "n": c["n"]},
        "expected": exp,
        "params": _sk_params(),
    }


@fixture("mhc.composite_perturbed", "fidelity.oracles.sinkhorn.composite", ["mhc.eq9", "mhc.eq6"])
def _mhc_composite():
    c = cases.MHC_PERTURBED
    exp = {}
    for n in c["n"]:
        cd = sk.constant_diagonal(n, 0, c["off"])
        comps = [sk.composite(n, 0, c["off"], T) for T in c["T"]]
        exp[f"n{n}"] = {"H_res_diag": num(cd["diag"]), "H_res_off": num(cd["off"]), "lambda2": num(cd["lambda2"]),
                        "identity_distance": num(cd["identity_distance"]),
                        "distance": num([x["distance"] for x in comps]),
                        "offdiag": num([x["offdiag"] for x in comps]),
                        "H_T_diag": num([x["H_T"][0, 0] for x in comps]),
                        "H_T_off": num([x["H_T"][0, 1] for x in comps])}
    l2 = sk.constant_diagonal(2, 0, c["off"])["lambda2"]
    return {
        "derivation": [
            "b_res = 2 (J - I): M(0) has 1 on the diagonal and e^2 elsewhere; one column normalisation gives",
            "diag = 1 / (1 + (n-1) e^2), off = e^2 / (1 + (n-1) e^2), already doubly stochastic and symmetric.",
            "H = diag I + off (J - I) has eigenvalues 1 (on the ones vector) and lambda2 = diag - off",
            "= (1 - e^2) / (1 + (n-1) e^2) ((n-1)-fold); n = 2: lambda2 = -tanh(1) = " + f10(l2) + ".",
            "So H^T = J/n + lambda2^T (I - J/n): ||H^T - J/n||_2 = |lambda2|^T, which shrinks monotonically,",
            "while the off-diagonal mass (n-1)(1 - lambda2^T) alternates around n - 1 because lambda2 < 0.",
            "T = 1..8.",
        ],
        "inputs": {"b_res_offdiagonal": c["off"], "n": c["n"], "T": c["T"]},
        "expected": exp,
        "params": _sk_params() | {"distance": "spectral norm ||H^T - J/n||_2"},
        "predictions": _predictions("mhc.composite.n2.not_unrolled", "mhc.composite.n4.not_unrolled"),
    }


@fixture("mhc.stiffness", "fidelity.oracles.sinkhorn.sinkhorn", ["mhc.init_static_bias", "mhc.eq9"])
def _mhc_stiffness():
    c = cases.MHC_STIFFNESS
    exp = {}
    notes = []
    for n in c["n"]:
        base = [[c["diag"] if i == j else 0 for j in range(n)] for i in range(n)]
        bumped = [row[:] for row in base]
        i, j = c["entry"]
        bumped[i][j] += c["bump"]
        Mb, Mp = sk.sinkhorn(base), sk.sinkhorn(bumped)
        diff = sk.max_abs_diff(Mp, Mb)
        dfx = sk.row_col_defects(Mp)
        exp[f"n{n}"] = {"M_base": num(Mb), "M_bumped": num(Mp), "max_change": num(diff),
                        "bumped_col_defect": num(dfx["col"])}
        if n == 2:
            lim = sk.limit_2x2(bumped)
            exp["n2"]["bumped_limit"] = num(lim.tolist())
            notes.append("n = 2: the bumped matrix's limit (cross ratio e^19) has off-diagonal 1 / (1 + e^9.5) = "
                         + f10(lim[0, 1]) + ", but M(20) has not reached it: near a diagonal pattern Sinkhorn is slow.")
        notes.append(f"n = {n}: max|SK(b) - SK(10 I)| = " + f10(diff) + ", max|column sum - 1| of SK(b) = "
                     + f10(dfx["col"]) + ".")
    return {
        "derivation": [
            "b = 10 I with +1 added to entry (0, 1). At 10 I the diagonal sits at e^10, so one unit on one",
            "off-diagonal logit multiplies a ~e^-10 entry by e: the change is of order (e - 1) e^-10.",
        ] + notes,
        "inputs": {"b_res_diagonal": c["diag"], "bump": c["bump"], "entry": c["entry"], "n": c["n"]},
        "expected": exp,
        "params": _sk_params(),
    }


def _eq3_common(case):
    with precision():
        hp = _mpn(mhc.h_post(case["b_post"]))
        hr = mhc.h_res(case["b_res"])
        x = _mpn([[exact(v) for v in r] for r in case["x"]])
        y = _mpn([[exact(v) for v in r] for r in case["y"]])
        out = mhc.eq3_sliced(x, y, hr, hp)
    return hp, hr, out


@fixture("mhc.eq3_sliced", "fidelity.oracles.mhc.eq3_sliced", ["mhc.eq3", "mhc.eq8", "mhc.eq9"])
def _mhc_eq3_sliced():
    c = cases.MHC_EQ3
    hp, hr, out = _eq3_common(c)
    rho = sk.cross_ratio(sk.exp_matrix(c["b_res"]))
    return {
        "derivation": [
            "n = 2 streams, C = 2, alpha = 0 (dynamic part off), so every coefficient is its static bias.",
            "H_post = 2 sigma(b_post) = [2 / (1 + e^(1/2)), 2 / (1 + e^(-3/2))] = [" + f10(hp[0]) + ", " + f10(hp[1]) + "].",
            "H_res = Sinkhorn(b_res): M(0) = [[1, 1/4], [1/4, 1]], cross ratio " + str(rho) + " = (p/(1-p))^2 gives p = 4/5;",
            "indeed the first column normalisation (column sums 5/4) already gives [[4/5, 1/5], [1/5, 4/5]], and it stays.",
            "Sliced layout: out[j,c] = sum_i H_res[j,i] x[i,c] + H_post[j] y[j,c], H_pre unwired.",
            "out[0,0] = 0.8*1 + 0.2*3 + " + f10(hp[0]) + "*10 = " + f10(out[0][0]) + ";  out[0,1] = 0.8*2 + 0.2*4 + "
            + f10(hp[0]) + "*20 = " + f10(out[0][1]) + ".",
            "out[1,0] = 0.2*1 + 0.8*3 + " + f10(hp[1]) + "*30 = " + f10(out[1][0]) + ";  out[1,1] = 0.2*2 + 0.8*4 + "
            + f10(hp[1]) + "*40 = " + f10(out[1][1]) + ".",
        ],
        "inputs": {k: inp(c[k]) for k in ("x", "y", "b_post", "b_res")} | {"alpha": 0},
        "expected": {"H_post": num(hp), "H_res": num(hr), "out": num(out)},
        "params": _sk_params() | {"layout": "sliced"},
        "predictions": _predictions("mhc.eq3.sigma_post", "mhc.eq3.no_sinkhorn", "mhc.eq3.exp_unnormalised",
                                    "mhc.eq3.offbyone_post", "mhc.eq3.transposed_post"),
    }


@fixture("mhc.eq3_paper", "fidelity.oracles.mhc.eq3_paper", ["mhc.eq3", "mhc.eq8", "mhc.eq9"])
def _mhc_eq3_paper():
    c = cases.MHC_EQ3
    hpre = mhc.h_pre(c["b_pre"])
    with precision():
        hpo = _mpn(mhc.h_post(c["b_post"]))
        hr = mhc.h_res(c["b_res"])
        x = _mpn([[exact(v) for v in r] for r in c["x"]])
        res = mhc.eq3_paper(x, _mpn([exact(v) for v in c["F"]]), _mpn(hpre), hr, hpo)
    return {
        "derivation": [
            "The paper's layout: x has n = 2 stream rows of C = 2; alpha = 0.",
            "H_pre = sigma(b_pre) = sigma([0, ln 3]) = [1/2, 3/4] exactly (sigma(ln 3) = 3 / (3 + 1)); b_pre is our choice.",
            "Layer input u = H_pre x = 1/2 [1, 2] + 3/4 [3, 4] = [11/4, 4].",
            "F's output is GIVEN as [10, 20] (F is not computed from u), so only the residual is under test.",
            "out[j] = sum_i H_res[j,i] x[i] + H_post[j] F: out[0] = [0.8 + 0.6, 1.6 + 0.8] + " + f10(hpo[0])
            + " [10, 20] = [" + ", ".join(f10(v) for v in res["out"][0]) + "];",
            "out[1] = [0.2 + 2.4, 0.4 + 3.2] + " + f10(hpo[1]) + " [10, 20] = [" + ", ".join(f10(v) for v in res["out"][1])
            + "].",
        ],
        "inputs": {k: inp(c[k]) for k in ("x", "F", "b_pre", "b_post", "b_res")} | {"alpha": 0},
        "expected": {"H_pre": num(hpre), "H_post": num(hpo), "H_res": num(hr), "u": num(res["u"]),
                     "out": num(res["out"])},
        "params": _sk_params() | {"layout": "paper"},
    }


@fixture("mhc.eq3_nonsym_n2", "fidelity.oracles.mhc.eq3_sliced", ["mhc.eq3", "mhc.eq8", "mhc.eq9"])
def _mhc_nonsym_n2():
    c = cases.MHC_NONSYM_N2
    hp, hr, out = _eq3_common(c)
    lim = sk.limit_2x2(c["b_res"])
    asym = abs(_mpn(hr[0][1]) - _mpn(hr[1][0]))
    return {
        "derivation": [
            "b_res = [[0, -ln 4], [-ln 2, 0]] is not symmetric, but its Sinkhorn limit is: every 2x2 doubly",
            "stochastic matrix is [[p, 1-p], [1-p, p]]. Cross ratio 1 / (1/4 * 1/2) = 8, p = sqrt(8) / (1 + sqrt(8))",
            "= (8 - 2 sqrt(2)) / 7 = " + f10(lim[0, 0]) + ".",
            "M(20) keeps an asymmetry |H[0,1] - H[1,0]| = " + f10(asym) + " only: a transposed H_res is invisible at",
            "n = 2 in float32 and barely visible in float64. This fixture CANNOT catch a transposed H_res;",
            "mhc.eq3_nonsym_n3 can.",
            "out[0,0] = H[0,0]*1 + H[0,1]*3 + " + f10(hp[0]) + "*10 = " + f10(out[0][0]) + ".",
        ],
        "inputs": {k: inp(c[k]) for k in ("x", "y", "b_post", "b_res")} | {"alpha": 0},
        "expected": {"H_post": num(hp), "H_res": num(hr), "H_res_limit": num(lim.tolist()), "out": num(out),
                     "H_res_asymmetry": num(asym)},
        "params": _sk_params() | {"layout": "sliced"},
        "predictions": _predictions("mhc.eq3_nonsym_n2.transposed_res"),
    }


@fixture("mhc.eq3_nonsym_n3", "fidelity.oracles.mhc.eq3_sliced", ["mhc.eq3", "mhc.eq8", "mhc.eq9"])
def _mhc_nonsym_n3():
    c = cases.MHC_NONSYM_N3
    hp, hr, out = _eq3_common(c)
    xs = [str(exact(r[0])) for r in c["x"]]
    ys0 = str(exact(c["y"][0][0]))
    return {
        "derivation": [
            "n = 3, C = 2, b_res = ln(2A) with A = [[1/2, 1/3, 1/6], [1/6, 1/2, 1/3], [1/3, 1/6, 1/2]] doubly stochastic",
            "and NOT symmetric. M(0) = 2A has column sums 2, so T_c gives A exactly and A is a fixed point:",
            "H_res = A. H_post = 2 sigma([-1/2, 3/2, 0]) = [" + ", ".join(f10(v) for v in hp) + "] (2 sigma(0) = 1).",
            "out[0,0] = 1/2*" + xs[0] + " + 1/3*" + xs[1] + " + 1/6*" + xs[2] + " + " + f10(hp[0]) + "*" + ys0
            + " = " + f10(out[0][0]) + ";",
            "with H_res transposed (row 0 = [1/2, 1/6, 1/3]): 1/2*" + xs[0] + " + 1/6*" + xs[1] + " + 1/3*" + xs[2]
            + " + ... = " + f10(_mpn(pr.transposed_res_n3()[0][0])) + ".",
        ],
        "inputs": {k: inp(c[k]) for k in ("x", "y", "b_post", "b_res")} | {"alpha": 0},
        "expected": {"H_post": num(hp), "H_res": num(hr), "out": num(out)},
        "params": _sk_params() | {"layout": "sliced"},
        "predictions": _predictions("mhc.eq3_nonsym_n3.transposed_res"),
    }


@fixture("mhc.eq7_dynamic", "fidelity.oracles.mhc.eq7_coefficients", ["mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.eq3"])
def _mhc_eq7():
    c = cases.MHC_DYNAMIC
    co = mhc.eq7_coefficients(c["x"], c["phi_pre"], c["phi_post"], c["phi_res"], c["alpha_pre"], c["alpha_post"],
                              c["alpha_res"], c["b_pre"], c["b_post"], c["b_res"], c["eps"])
    with precision():
        x = _mpn([[exact(v) for v in r] for r in c["x"]])
        y = _mpn([[exact(v) for v in r] for r in c["y"]])
        hpre, hpo, hr = _mpn(co["H_pre"]), _mpn(co["H_post"]), co["H_res"]
        sliced = mhc.eq3_sliced(x, y, hr, hpo)
        paper = mhc.eq3_paper(x, _mpn([exact(v) for v in c["F"]]), hpre, hr, hpo)
    r = sympy.sqrt(sympy.Rational(30, 4) + exact(c["eps"]))
    return {
        "derivation": [
            "Eq. 7 with alpha != 0, n = 2, C = 2. vec x = [1, 2, 3, 4] (row-major), mean(x^2) = 30/4 = 7.5,",
            "x' = vec x / sqrt(7.5 + 1e-20) = vec x / " + f10(r) + " (RMSNorm, no gain; eps = 1e-20 as in App. A.1).",
            "H~pre = alpha_pre (x' phi_pre) + b_pre = [" + ", ".join(f10(v) for v in co["H_pre_tilde"]) + "],",
            "H~post = alpha_post (x' phi_post) + b_post = [" + ", ".join(f10(v) for v in co["H_post_tilde"]) + "],",
            "H~res = alpha_res mat(x' phi_res) + b_res, mat = row-major 2x2 reshape = "
            + str([[f10(v) for v in row] for row in co["H_res_tilde"]]) + ".",
            "Eq. 8: H_pre = sigma(H~pre), H_post = 2 sigma(H~post), H_res = Sinkhorn(H~res), t_max = 20.",
            "Both Eq. 3 layouts follow, with y (sliced) and F (paper) given as in mhc.eq3_sliced / mhc.eq3_paper.",
        ],
        "inputs": {k: inp(c[k]) for k in ("x", "y", "F", "phi_pre", "phi_post", "phi_res", "alpha_pre", "alpha_post",
                                          "alpha_res", "b_pre", "b_post", "b_res", "eps")},
        "expected": {"x_normed": num(co["x_normed"]), "H_pre_tilde": num(co["H_pre_tilde"]),
                     "H_post_tilde": num(co["H_post_tilde"]), "H_res_tilde": num(co["H_res_tilde"]),
                     "H_pre": num(hpre), "H_post": num(hpo), "H_res": num(hr),
                     "out_sliced": num(sliced), "u_paper": num(paper["u"]), "out_paper": num(paper["out"])},
        "params": _sk_params() | {"eps": inp(c["eps"]), "reshape": "row-major", "norm": "RMSNorm over the flattened nC"},
    }


@fixture("mhc.params", "fidelity.oracles.mhc.param_count", ["mhc.params"])
def _mhc_params():
    c = cases.MHC_PARAMS
    D = c["D"]
    exp = {}
    lines = []
    for n in c["n"]:
        shapes = mhc.param_shapes(D, n)
        total = mhc.param_count(D, n)
        exp[f"n{n}"] = {"shapes": exact_structure({k: list(v) for k, v in shapes.items()}),
                        "total": num(total), "formula": num(mhc.param_formula(D, n)),
                        "unwired_pre": num(mhc.param_count(D, n, ["phi_pre", "alpha_pre", "b_pre"])),
                        "percent_of_model": num(sympy.Rational(100 * total, c["model_params"]))}
        lines.append(f"n = {n}: 2*{D}*{n} + {D}*{n * n} + 2*{n} + {n * n} + 3 = {mhc.param_formula(D, n)}; "
                     f"shape table sum = {total}; H_pre's unwired share phi_pre + alpha_pre + b_pre = "
                     f"{D}*{n} + 1 + {n} = {mhc.param_count(D, n, ['phi_pre', 'alpha_pre', 'b_pre'])}.")
    return {
        "derivation": [
            "Shapes: phi_pre [D, n], phi_post [D, n], phi_res [D, n^2], alpha_pre/post/res scalars, b_pre [n],",
            "b_post [n], b_res [n, n]. Total 2Dn + Dn^2 + 2n + n^2 + 3.",
        ] + lines + [f"Percentages are of the stated model size {c['model_params']}."],
        "inputs": {"D": D, "n": c["n"], "model_params": c["model_params"]},
        "expected": exp,
        "params": {},
    }


# ---- Hyper-Connections -------------------------------------------------------------------------

def _hc_Ts():
    return [hc.linear_T([[exact(v) for v in r] for r in W]) for W in cases.HC_STATIC["W"]]


@fixture("hc.static_eq14", "fidelity.oracles.hc.run_static",
         ["hc.eq1", "hc.eq2", "hc.eq3", "hc.eq4", "hc.eq5", "hc.eq14"])
def _hc_static():
    c = cases.HC_STATIC
    n = c["n"]
    rep = hc.run_static(c["h"], n, _hc_Ts())
    dis = hc.run_layers(c["H0_distinct"], _hc_Ts())
    shifted = hc.run_layers(c["H0_distinct"], _hc_Ts(), index_shift=1)
    dis_readout = sympy.ones(1, n) * dis[-1]
    shifted_readout = sympy.ones(1, n) * shifted[-1]
    return {
        "derivation": [
            f"n = {n} streams, d = 2, L = 4 layers with T_k(h) = h W_k (row vector times matrix), Eq. 14 init:",
            "B = [1, 1, 1], A_m = e_(k mod n) with k the 0-based layer index (Alg. 2), A_r = I.",
            "One layer: h0 = A_m^T H (row k mod n of H), H' = H, out = B^T T(h0) + H' (T(h0) added to every row).",
            "Replicated input H0 = (h, h, h), h = [1, -2]: every row stays equal to the Pre-Norm residual stream",
            "r_k = r_{k-1} + r_{k-1} W_k, and the row-sum readout is n r_L = "
            + str([f10(v) for v in rep["readout"]]) + " = 3 * " + str([f10(v) for v in rep["prenorm"][-1]]) + ".",
            "Distinct rows H0 = [[1, 2], [3, -1], [0, 1]] make the A_m index visible: layer k reads row k mod 3;",
            "an implementation that reads row (k + 1) mod 3 ends at readout " + str([f10(v) for v in shifted_readout])
            + " instead of " + str([f10(v) for v in dis_readout]) + ".",
        ],
        "inputs": {"h": inp(c["h"]), "H0_distinct": inp(c["H0_distinct"]), "W": inp(c["W"]), "n": n},
        "expected": {"replicated_H": num([H.tolist() for H in rep["H"]]),
                     "replicated_prenorm": num([r.tolist()[0] for r in rep["prenorm"]]),
                     "replicated_readout": num(rep["readout"].tolist()[0]),
                     "distinct_H": num([H.tolist() for H in dis]),
                     "distinct_readout": num(dis_readout.tolist()[0])},
        "params": {"layer_index": "0-based (k = 0..L-1)", "T": "h W_k"},
        "predictions": {"hc.static.layer_index_shifted": {
            "description": "A_m = e_((k+1) mod n): the layer index off by one (1-based k), distinct-rows input",
            "field": "distinct_readout", **num(shifted_readout.tolist()[0])}},
    }


@fixture("hc.dhc_zero_weights", "fidelity.oracles.hc.dhc_layer",
         ["hc.eq8", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.eq14"])
def _hc_dhc_zero():
    c = cases.HC_STATIC
    n, d = c["n"], 2
    H = sympy.Matrix([[exact(v) for v in r] for r in c["H0_distinct"]])
    init = hc.eq14_init(n, 0)
    T = _hc_Ts()[0]
    dyn = hc.dhc_layer(H, init["B"], init["A_m"], init["A_r"], sympy.zeros(d, 1), sympy.zeros(d, 1),
                       sympy.zeros(d, n), "1/100", "1/100", "1e-5", T)
    static = hc.hc_layer(H, init["B"], init["A_m"], init["A_r"], T)
    return {
        "derivation": [
            "DHC with W_beta = W_m = W_r = 0 (the Eq. 14 init of the dynamic part): tanh(Hbar 0) = tanh(0) = 0, so",
            "B(H) = B, A_m(H) = A_m, A_r(H) = A_r and the layer is exactly the static HC layer, for any s_alpha, s_beta.",
            "Layer k = 0 on H0 = [[1, 2], [3, -1], [0, 1]] with T(h) = h W_0: h0 = row 0 = [1, 2],",
            "T(h0) = " + str([f10(v) for v in static["out"].row(0) - H.row(0)]) + ", added to every row.",
        ],
        "inputs": {"H": inp(c["H0_distinct"]), "W_T": inp(c["W"][0]), "s_alpha": inp("1/100"), "s_beta": inp("1/100")},
        "expected": {"B": num(dyn["B"].tolist()), "A_m": num(dyn["A_m"].tolist()), "A_r": num(dyn["A_r"].tolist()),
                     "out": num(dyn["out"].tolist()), "static_out": num(static["out"].tolist())},
        "params": {"layer_index": 0, "norm": "LayerNorm per stream, no affine", "eps": inp("1e-5")},
    }


@fixture("hc.dhc_dynamic", "fidelity.oracles.hc.dhc_layer",
         ["hc.eq8", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13"])
def _hc_dhc_dynamic():
    c = cases.HC_DHC
    n, k = c["n"], c["k"]
    H = sympy.Matrix([[exact(v) for v in r] for r in c["H"]])
    init = hc.eq14_init(n, k)
    mat = lambda M: sympy.Matrix([[exact(v) for v in r] for r in M])  # noqa: E731
    T = hc.linear_T(mat(c["W_T"]))
    res = hc.dhc_layer(H, init["B"], init["A_m"], init["A_r"], mat(c["W_beta"]), mat(c["W_m"]), mat(c["W_r"]),
                       c["s_alpha"], c["s_beta"], c["eps"], T)
    Hbar = hc.layer_norm_rows(H, c["eps"])
    return {
        "derivation": [
            "DHC, n = 2, d = 3, layer k = 1 (static part: B = [1, 1], A_m = e_1, A_r = I), s_alpha = s_beta = 1/10.",
            "Hbar = per-stream LayerNorm (no affine, eps = 1e-5): row 0 [1, 2, -1] has mean 2/3 and variance 14/9,",
            "so Hbar row 0 = ([1, 2, -1] - 2/3) / sqrt(14/9 + 1e-5) = [" + ", ".join(f10(v) for v in Hbar.row(0)) + "].",
            "B(H) = s_beta tanh(Hbar W_beta)^T + B = [" + ", ".join(f10(v) for v in res["B"]) + "];",
            "A_m(H) = s_alpha tanh(Hbar W_m) + A_m = [" + ", ".join(f10(v) for v in res["A_m"]) + "];",
            "A_r(H) = s_alpha tanh(Hbar W_r) + A_r. Then h0 = A_m(H)^T H, H' = A_r(H)^T H, out = B(H)^T (h0 W_T) + H'.",
        ],
        "inputs": {k2: inp(c[k2]) for k2 in ("H", "W_T", "W_beta", "W_m", "W_r", "s_alpha", "s_beta", "eps")}
        | {"n": n, "k": k},
        "expected": {"H_bar": num(Hbar.tolist()), "B": num(res["B"].tolist()), "A_m": num(res["A_m"].tolist()),
                     "A_r": num(res["A_r"].tolist()), "h0": num(res["h0"].tolist()),
                     "H_prime": num(res["H_prime"].tolist()), "out": num(res["out"].tolist())},
        "params": {"norm": "LayerNorm per stream, no affine", "eps": inp(c["eps"]), "T": "h W_T"},
    }


# ---- store API ---------------------------------------------------------------------------------

def build(fixture_id: str) -> dict:
    """The full fixture object for `fixture_id`, computed now."""
    try:
        spec = FIXTURES[fixture_id]
    except KeyError:
        raise FixtureError(f"{fixture_id}.json", "id", f"unknown fixture {fixture_id!r}") from None
    body = spec.build()
    obj = {
        "id": spec.id,
        "oracle": spec.oracle,
        "equations": list(spec.equations),
        "derivation": body["derivation"],
        "inputs": body["inputs"],
        "expected": body["expected"],
        "params": body["params"],
        "precision_digits": DIGITS,
        "predictions": body.get("predictions", {}),
    }
    return json.loads(serialise(obj))


def serialise(obj: dict) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, allow_nan=False) + "\n"


def _directory(directory) -> Path:
    if directory is None:
        from fidelity import project

        return project.current().fixtures
    return Path(directory)


def project_fixtures(builders: Sequence[str] | None = None) -> list[str]:
    """The ids of the fixtures the modules `builders` register (default: the current project's
    fixture_builders), importing each so that its builders are registered."""
    if builders is None:
        from fidelity import project

        builders = project.current().fixture_builders
    for module in builders:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise FixtureError(module, None, f"fixture builder module does not import: {exc}") from None
    return sorted(fid for fid, spec in FIXTURES.items() if spec.module in builders)


def regenerate(directory: Path | str | None = None, ids: list[str] | None = None) -> list[Path]:
    """Write every fixture of the project (or `ids`) to `<directory>/<id>.json`; return the paths written."""
    out = _directory(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fid in (ids or project_fixtures()):
        path = out / f"{fid}.json"
        path.write_text(serialise(build(fid)), encoding="utf-8")
        paths.append(path)
    return paths


def _read(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FixtureError(path, None, "no such fixture file") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FixtureError(path, None, f"invalid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise FixtureError(path, None, "a fixture file must hold a JSON object")
    for field in REQUIRED_FIELDS:
        if field not in obj:
            raise FixtureError(path, field, "missing field")
    if obj["id"] != path.stem:
        raise FixtureError(path, "id", f"id {obj['id']!r} does not match the file name")
    return obj


def load(fixture_id: str, directory: Path | str | None = None) -> dict:
    """Read and check the stored fixture `fixture_id` (no recomputation)."""
    path = _directory(directory) / f"{fixture_id}.json"
    if fixture_id not in FIXTURES:
        project_fixtures()  # a gate process may not have imported the project's builders yet
    if fixture_id not in FIXTURES:
        raise FixtureError(path, "id", f"unknown fixture {fixture_id!r}")
    return _read(path)


def _compare(path: Path, fid: str, stored, fresh, where: str, drifts: list[Drift]) -> None:
    if isinstance(fresh, dict):
        if not isinstance(stored, dict):
            drifts.append(Drift(path, fid, where, stored, fresh))
            return
        for key in fresh:
            sub = f"{where}.{key}" if where else key
            if key not in stored:
                raise FixtureError(path, sub, "missing field")
            _compare(path, fid, stored[key], fresh[key], sub, drifts)
        for key in stored:
            if key not in fresh:
                raise FixtureError(path, f"{where}.{key}" if where else key, "unexpected field")
        return
    if isinstance(fresh, list):
        if not isinstance(stored, list) or len(stored) != len(fresh):
            drifts.append(Drift(path, fid, where, stored, fresh))
            return
        for i, (s, f) in enumerate(zip(stored, fresh)):
            _compare(path, fid, s, f, f"{where}[{i}]", drifts)
        return
    if type(stored) is not type(fresh) or stored != fresh:
        drifts.append(Drift(path, fid, where, stored, fresh))


def verify(directory: Path | str | None = None, ids: list[str] | None = None) -> list[Drift]:
    """Recompute every fixture of the project (or `ids`) and compare it with its file, leaf by leaf.

    Returns one Drift per differing value (a missing file is one Drift with field "<file>").
    Raises FixtureError for invalid JSON, a missing or unexpected field, or a *.json file that
    no fixture of the project owns.
    """
    d = _directory(directory)
    owned = ids or project_fixtures()
    drifts: list[Drift] = []
    for path in sorted(d.glob("*.json")):
        if path.stem not in owned:
            raise FixtureError(path, "id", f"unknown fixture file (no registered fixture {path.stem!r})")
    for fid in owned:
        path = d / f"{fid}.json"
        if not path.exists():
            drifts.append(Drift(path, fid, "<file>", None, "a fixture file"))
            continue
        stored = _read(path)
        _compare(path, fid, stored, build(fid), "", drifts)
    return drifts


def main(argv: list[str] | None = None) -> int:
    """`python -m fidelity.fixture_store [regenerate|verify] [directory]`."""
    import sys
    import time

    args = sys.argv[1:] if argv is None else argv
    cmd = args[0] if args else "verify"
    directory = args[1] if len(args) > 1 else None
    t0 = time.perf_counter()
    if cmd == "regenerate":
        for p in regenerate(directory):
            print(p)
        return 0
    drifts = verify(directory)
    for dr in drifts:
        print(dr)
    print(f"{len(project_fixtures())} fixtures, {len(drifts)} drifts, {time.perf_counter() - t0:.2f} s")
    return 1 if drifts else 0


if __name__ == "__main__":
    raise SystemExit(main())
