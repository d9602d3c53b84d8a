"""Fixtures of the weight-shared loop model (mechanism `loop_model`), computed by fidelity.oracles.loop_model.

- loop_model.defaults: LoopConfig()'s defaults as the spec gives them (attnres.loop.*, attnres.eps,
  mhc.table5.eps, mhc.table5.tmax; the string choices of attnres.loop.config), and the oracle's logits of
  every arm at those defaults, at a set of seeded parameters (dyadic rationals, exact in float32 and float64).
  The parameters are generic on purpose (phi != 0, alpha ~ 1, b_res far from c I): at the module's own init
  mhc_eps, t_max and the dynamic coefficients have no visible effect, so a default passed wrongly would not show.
- loop_model.alive: for each arm graph (rezero, attnres, mhc sliced, mhc paper, hc dynamic, hc static) and
  each parameter wired in it, a seeded direction of stated size and the oracle's max |change of the logits|
  when that one parameter moves along it (the parameters_alive gate).
- loop_model.module_jacobian: for each arm graph at a tiny config (vocab 3, d 2, T 2, hidden_mult 1, 2 streams;
  every other field the spec's default) and one token, d (every iteration's logits) / d p for the parameters p
  wired in it (a few left out, each held in another graph: see JACOBIAN_LEFT_OUT): central differences
  of the oracle at its own 60 digits (fidelity.oracles.derivatives.jacobian_at_dps), ~38 good digits, stored at 40.
- loop_model.composite_asymmetric: the loop's composite H_res^T (mhc.eq4) for an n = 3 b_res whose Sinkhorn
  limit is not symmetric, so the order and orientation of the factors show.

Defaults are read from the spec with spec_value_exact, never typed here; the parameters and directions are
drawn from Python's random.Random (stable across versions) as k/256 times a power of two.
"""
from __future__ import annotations

import random

import mpmath
import sympy

from fidelity.fixture_store import f10, fixture, inp, num
from fidelity.oracles import loop_model as lo
from fidelity.oracles import sinkhorn as sk
from fidelity.oracles._precision import mp, precision
from fidelity.oracles.derivatives import flatten, jacobian_at_dps, shape_of, unflatten
from fidelity.spec.values import spec_value, spec_value_exact

ARMS = ("rezero", "attnres", "mhc", "hc")

NUMERIC_DEFAULTS = {  # LoopConfig field -> the spec equation whose `value:` is its default
    "vocab": "attnres.loop.vocab",
    "d": "attnres.loop.d",
    "T": "attnres.loop.T",
    "hidden_mult": "attnres.loop.hidden_mult",
    "mhc_streams": "attnres.loop.mhc_streams",
    "hc_streams": "attnres.loop.hc_streams",
    "hc_dynamic": "attnres.loop.hc_dynamic",
    "mhc_dynamic_init_std": "attnres.loop.mhc_dynamic_init_std",
    "attnres_eps": "attnres.eps",
    "mhc_eps": "mhc.table5.eps",
    "sinkhorn_t_max": "mhc.table5.tmax",
}
CHOICE_DEFAULTS = {  # the string defaults attnres.loop.config states (a `value:` holds numbers only)
    "arm": "rezero",
    "mhc_layout": "sliced",
    "score_convention": "paper",
    "activation": "tanh",
}
CHOICE_EQUATION = "attnres.loop.config"

SHARED = ("embed", "iter_embed", "body_w1", "body_b1", "body_w2", "body_b2", "readout_w", "readout_b")
MHC_PRE = ("mhc.phi_pre", "mhc.alpha_pre", "mhc.b_pre")
MHC_POST_RES = ("mhc.phi_post", "mhc.alpha_post", "mhc.b_post", "mhc.phi_res", "mhc.alpha_res", "mhc.b_res")
HC_STATIC = ("hc.static_beta", "hc.static_alpha")
HC_DYNAMIC = ("hc.dynamic_alpha_fn", "hc.dynamic_beta_fn", "hc.alpha_scale", "hc.beta_scale",
              "hc.layer_norm.weight", "hc.layer_norm.bias")
VARIANTS = {  # graph name -> (config overrides of the defaults, the parameters wired in it)
    "rezero": ({"arm": "rezero"}, SHARED + ("residual_scale",)),
    "attnres": ({"arm": "attnres"}, SHARED + ("attnres_queries",)),
    "mhc_sliced": ({"arm": "mhc", "mhc_layout": "sliced"}, SHARED + MHC_POST_RES),
    "mhc_paper": ({"arm": "mhc", "mhc_layout": "paper"}, SHARED + MHC_PRE + MHC_POST_RES),
    "hc_dynamic": ({"arm": "hc", "hc_dynamic": True}, SHARED + HC_STATIC + HC_DYNAMIC),
    "hc_static": ({"arm": "hc", "hc_dynamic": False}, SHARED + HC_STATIC),
}
TOKENS = (3, 11)  # the defaults fixture's token ids (any ids < vocab; two, so a per-token mix-up shows)
ALIVE_TOKENS = (3,)  # one token: the loop is per position, and the oracle's cost is per token
DIRECTION_SIZE = sympy.Rational(1, 32)  # each entry of a direction is U{-1..1 in 1/256 steps} times this
PARAM_SEED, DIRECTION_SEED = 1414, 2718


def loop_defaults() -> dict:
    """LoopConfig()'s defaults: numbers from the spec (exact), strings from attnres.loop.config."""
    cfg: dict = dict(CHOICE_DEFAULTS)
    for field, eq in NUMERIC_DEFAULTS.items():
        cfg[field] = spec_value_exact(eq)
    for field in ("vocab", "d", "T", "hidden_mult", "mhc_streams", "hc_streams", "sinkhorn_t_max"):
        cfg[field] = int(spec_value(NUMERIC_DEFAULTS[field]))
    cfg["hc_dynamic"] = bool(spec_value(NUMERIC_DEFAULTS["hc_dynamic"]))
    return cfg


def shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    """The model's parameters and their shapes for a config (fidelity.mechanisms.loop_model)."""
    V, d, T, hd = cfg["vocab"], cfg["d"], cfg["T"], cfg["hidden_mult"] * cfg["d"]
    n, m = cfg["mhc_streams"], cfg["hc_streams"]
    nC = d if cfg["mhc_layout"] == "sliced" else n * d
    out = {"embed": (V, d), "iter_embed": (T, d), "body_w1": (hd, d), "body_b1": (hd,), "body_w2": (d, hd),
           "body_b2": (d,), "readout_w": (V, d), "readout_b": (V,), "residual_scale": (), "attnres_queries": (T, d),
           "mhc.phi_pre": (nC, n), "mhc.phi_post": (nC, n), "mhc.phi_res": (nC, n * n), "mhc.alpha_pre": (),
           "mhc.alpha_post": (), "mhc.alpha_res": (), "mhc.b_pre": (n,), "mhc.b_post": (n,), "mhc.b_res": (n, n),
           "hc.static_beta": (m,), "hc.static_alpha": (m, m + 1)}
    if cfg["hc_dynamic"]:
        out.update({"hc.dynamic_alpha_fn": (d, m + 1), "hc.dynamic_beta_fn": (d,), "hc.alpha_scale": (),
                    "hc.beta_scale": (), "hc.layer_norm.weight": (d,), "hc.layer_norm.bias": (d,)})
    return out


def _draw(rng: random.Random, shape: tuple[int, ...], scale, centre=0):
    if not shape:
        return centre + sympy.Rational(rng.randint(-256, 256), 256) * scale
    return [_draw(rng, shape[1:], scale, centre) for _ in range(shape[0])]


# name -> (scale, centre) of the seeded base parameters: O(1) logits, every coefficient away from its
# init (phi != 0, alpha ~ 1/2, LayerNorm affine != (1, 0)), so each default and each parameter shows.
_BASE = {
    "embed": (1, 0), "iter_embed": (sympy.Rational(1, 4), 0), "body_w1": (sympy.Rational(1, 2), 0),
    "body_b1": (sympy.Rational(1, 4), 0), "body_w2": (sympy.Rational(1, 4), 0), "body_b2": (sympy.Rational(1, 4), 0),
    "readout_w": (sympy.Rational(1, 2), 0), "readout_b": (sympy.Rational(1, 4), 0),
    "residual_scale": (sympy.Rational(1, 4), sympy.Rational(3, 4)), "attnres_queries": (1, 0),
    "mhc.phi_pre": (sympy.Rational(1, 2), 0), "mhc.phi_post": (sympy.Rational(1, 2), 0),
    "mhc.phi_res": (sympy.Rational(1, 2), 0), "mhc.alpha_pre": (sympy.Rational(1, 4), sympy.Rational(1, 2)),
    "mhc.alpha_post": (sympy.Rational(1, 4), sympy.Rational(1, 2)),
    "mhc.alpha_res": (sympy.Rational(1, 4), 1), "mhc.b_pre": (1, 0), "mhc.b_post": (sympy.Rational(1, 2), 0),
    "hc.static_beta": (sympy.Rational(1, 4), 1), "hc.dynamic_alpha_fn": (sympy.Rational(1, 2), 0),
    "hc.dynamic_beta_fn": (sympy.Rational(1, 2), 0), "hc.alpha_scale": (sympy.Rational(1, 4), sympy.Rational(1, 2)),
    "hc.beta_scale": (sympy.Rational(1, 4), sympy.Rational(1, 2)),
    "hc.layer_norm.weight": (sympy.Rational(1, 4), 1), "hc.layer_norm.bias": (sympy.Rational(1, 4), 0),
}


def base_params(cfg: dict) -> dict:
    """Seeded parameters for `cfg`'s shapes; b_res = [[2, -1], [0, 1]]-like (cross ratio e^4: Sinkhorn still
    moving at t = 10), static_alpha = the Eq. 14 init [e_0 | I] plus a seeded 1/8-sized offset."""
    out = {}
    for name, shape in shapes(cfg).items():
        rng = random.Random(f"{PARAM_SEED}:{name}:{shape}")
        if name == "mhc.b_res":
            n = shape[0]
            out[name] = [[(2 if i == j else 0) - (1 if j == (i + 1) % n and i == 0 else 0)
                          + sympy.Rational(rng.randint(-256, 256), 256) / 8 for j in range(n)] for i in range(n)]
        elif name == "hc.static_alpha":
            m = shape[0]
            out[name] = [[(1 if (j == 0 and i == 0) or j == i + 1 else 0) + sympy.Rational(rng.randint(-256, 256), 256)
                          / 8 for j in range(m + 1)] for i in range(m)]
        else:
            scale, centre = _BASE[name]
            out[name] = _draw(rng, shape, scale, centre)
    return out


def direction(name: str, shape: tuple[int, ...]):
    """The seeded direction along which `name` is moved (entries k/256 * DIRECTION_SIZE, |k| <= 256)."""
    return _draw(random.Random(f"{DIRECTION_SEED}:{name}:{shape}"), shape, DIRECTION_SIZE)


def _add(a, b):
    if isinstance(a, list):
        return [_add(x, y) for x, y in zip(a, b)]
    return a + b


def _logits(tokens, params, cfg) -> list:
    """[T][tokens][vocab] mpf."""
    per_token = [lo.loop_logits(t, params, cfg) for t in tokens]
    return [[per_token[b][k] for b in range(len(tokens))] for k in range(cfg["T"])]


def _max_change(a, b):
    with precision():
        return max(abs(x - y) for ka, kb in zip(a, b) for ra, rb in zip(ka, kb) for x, y in zip(ra, rb))


def _cfg_json(cfg: dict) -> dict:
    return {k: (v if isinstance(v, (str, bool, int)) else inp(v)) for k, v in cfg.items()}


@fixture("loop_model.defaults", "fidelity.oracles.loop_model.loop_logits",
         ["attnres.loop.config", "attnres.placement_loop", "attnres.eps", "mhc.table5.eps", "mhc.table5.tmax",
          "mhc.eq3", "mhc.eq7", "hc.eq5"])
def _loop_defaults():
    cfg = loop_defaults()
    params = base_params(cfg)
    expected, spread = {}, {}
    for arm in ARMS:
        at = dict(cfg, arm=arm)
        logits = _logits(TOKENS, params, at)
        expected[f"logits_{arm}"] = num(logits)
        wrong = {"mhc": {"mhc_eps": sympy.Rational(1, 10**6)}, "attnres": {"attnres_eps": sympy.Rational(1, 10**5)}}
        if arm == "mhc":
            wrong["mhc_t10"] = {"sinkhorn_t_max": 10}
        for label, change in wrong.items():
            if label.split("_")[0] == arm:
                spread[label] = _max_change(logits, _logits(TOKENS, params, dict(at, **change)))
    cfg_text = ", ".join(f"{k} = {v}" for k, v in cfg.items())
    return {
        "derivation": [
            "LoopConfig() as the spec gives it: " + cfg_text + " (numbers: the `value:` of "
            + ", ".join(f"{k} <- {v}" for k, v in NUMERIC_DEFAULTS.items()) + "; strings: attnres.loop.config).",
            "Parameters (inputs.params): seeded k/256 multiples, not the init: at the init (phi = 0, b_res = 10 I) "
            "mhc_eps, t_max and the dynamic coefficients have no visible effect on the logits.",
            "Oracle (fidelity.oracles.loop_model.loop_logits): h_0 = embed[token]; per iteration h_ctx = h + e_k, then "
            "the arm's write by the composed oracles (depth_attention, mhc.eq7_coefficients + eq3, hc.layer_norm_rows + "
            "hc_layer), logits_k = readout_w hidden + readout_b; logits_<arm>[k][b] is iteration k, token TOKENS[b].",
            "How far a wrong default moves the logits (max |change|, same parameters): mhc_eps 1e-6 for 1e-20: "
            + f10(spread["mhc"]) + "; sinkhorn_t_max 10 for 20: " + f10(spread["mhc_t10"])
            + "; attnres_eps 1e-5 for 1e-6: " + f10(spread["attnres"]) + ".",
        ],
        "inputs": {"tokens": list(TOKENS), "params": {k: inp(v) for k, v in params.items()}},
        "expected": expected | {f"wrong_default_change_{k}": num(v) for k, v in spread.items()},
        "params": {"defaults": _cfg_json(cfg), "spec": dict(NUMERIC_DEFAULTS) | {k: CHOICE_EQUATION
                                                                                  for k in CHOICE_DEFAULTS}},
    }


@fixture("loop_model.alive", "fidelity.oracles.loop_model.loop_logits",
         ["attnres.placement_loop", "mhc.eq3", "mhc.eq7", "mhc.eq8", "hc.eq5", "hc.eq11", "hc.eq12", "hc.eq13"])
def _loop_alive():
    base = loop_defaults()
    variants, inputs = {}, {}
    for vname, (override, wired) in VARIANTS.items():
        cfg = dict(base, **override)
        params = base_params(cfg)
        shp = shapes(cfg)
        before = _logits(ALIVE_TOKENS, params, cfg)
        changes = {}
        dirs = {}
        for name in wired:
            dirs[name] = direction(name, shp[name])
            moved = dict(params, **{name: _add(params[name], dirs[name])})
            changes[name] = num(_max_change(before, _logits(ALIVE_TOKENS, moved, cfg)))
        variants[vname] = {"max_change": changes}
        inputs[vname] = {"config": {k: override[k] for k in override},
                         "params": {k: inp(v) for k, v in params.items()},
                         "directions": {k: inp(v) for k, v in dirs.items()}}
    return {
        "derivation": [
            "Per arm graph (inputs.<graph>.config over the defaults of loop_model.defaults) the seeded parameters "
            "of loop_model.defaults' builder for that config's shapes, and per wired parameter a seeded direction "
            f"with entries k/256 * {DIRECTION_SIZE} (|k| <= 256).",
            "expected.<graph>.max_change.<param> = max over iterations, tokens and vocab of |logits(p + dir) - "
            "logits(p)|, both by the oracle (fidelity.oracles.loop_model.loop_logits), token ids " + str(ALIVE_TOKENS)
            + ". A parameter the subject never reads moves its logits by 0.",
        ],
        "inputs": inputs | {"tokens": list(ALIVE_TOKENS)},
        "expected": {k: {"max_change": v["max_change"]} for k, v in variants.items()},
        "params": {"direction_size": inp(DIRECTION_SIZE), "wired": {k: list(v[1]) for k, v in VARIANTS.items()},
                   "defaults": _cfg_json(base)},
    }


COMPOSITE_B_RES = [[2, 0, -1], [1, 1, 0], [-1, 2, 0]]  # n = 3: its Sinkhorn limit is NOT symmetric
COMPOSITE_T = (1, 2, 3, 4)


def _matmul(A, B):
    return [[mpmath.fsum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]


@fixture("loop_model.composite_asymmetric", "fidelity.oracles.sinkhorn.sinkhorn", ["mhc.composite", "mhc.eq4", "mhc.eq9"])
def _loop_composite_asymmetric():
    t_max = int(spec_value("mhc.table5.tmax"))
    with precision():
        H = sk.sinkhorn(COMPOSITE_B_RES, t_max)
        powers, P = {}, [[mpmath.mpf(int(i == j)) for j in range(3)] for i in range(3)]
        for T in range(1, max(COMPOSITE_T) + 1):
            P = _matmul(H, P)
            if T in COMPOSITE_T:
                powers[T] = P
        asym = max(abs(H[i][j] - H[j][i]) for i in range(3) for j in range(3))
        gap = max(abs(powers[T][i][j] - powers[T][j][i]) for T in COMPOSITE_T for i in range(3) for j in range(3))
    return {
        "derivation": [
            f"b_res = {COMPOSITE_B_RES} (n = 3, phi = 0 so H_res does not depend on x), H_res = Sinkhorn(b_res) at "
            f"t_max = {t_max} (mhc.table5.tmax; sinkhorn.sinkhorn, mpmath).",
            "The loop's composite over T iterations of the ONE shared block is H_res^T, the matrix power (mhc.eq4); "
            f"expected.H_T[T] for T = {list(COMPOSITE_T)}.",
            "H_res is not symmetric (a 3 x 3 doubly stochastic matrix need not be): max |H - H^t| = " + f10(asym)
            + ", and max |H^T - (H^T)^t| over T = " + f10(gap) + ", so a transposed factor shows.",
        ],
        "inputs": {"b_res": inp(COMPOSITE_B_RES), "T": list(COMPOSITE_T)},
        "expected": {"H_res": num(H), "H_T": {str(T): num(powers[T]) for T in COMPOSITE_T},
                     "transpose_gap": num(gap)},
        "params": {"t_max": t_max, "n": 3},
    }


# ---- the oracle's Jacobian at a tiny config (the gradients_from_oracle gate) -------------------

JACOBIAN_SIZES = {"vocab": 3, "d": 2, "T": 2, "hidden_mult": 1, "mhc_streams": 2, "hc_streams": 2}
"""Sizes, not defaults (those stay the spec's): small, so the 2 N oracle calls of each Jacobian stay cheap."""
JACOBIAN_TOKENS = (1,)  # one token: the loop is per position, and each token doubles the oracle's calls
BODY_READOUT = ("body_w1", "body_b1", "body_w2", "body_b2", "readout_w", "readout_b")
JACOBIAN_LEFT_OUT = {  # graph -> wired parameters whose Jacobian this fixture skips, each held in another graph
    # to build in ~2 s, not ~4: the body and the readout are the same functions in every arm (held in the cheap
    # rezero and hc_static graphs), and their paths through each arm are embed's and iter_embed's too
    "attnres": BODY_READOUT, "mhc_sliced": BODY_READOUT,
    "hc_dynamic": BODY_READOUT + HC_STATIC,  # the static coefficients: held in hc_static
    # phi_post: the same coefficient code in both layouts (held in mhc_sliced). H_res's three: at T = 2, H_res
    # reaches the logits only through its row sums (it first acts on the equal replicated streams) and its
    # column sums (the readout sums its last output), both ~1 after Sinkhorn, so |d logits / d b_res| ~ 3e-6 is
    # the unconverged residual, a cancellation of far larger terms that no eps-sized bound relative to it can
    # hold (measured 1.3e3 and 1.4e3 eps in float32 and float64). Held in mhc_sliced and by mhc.module_jacobian's paper layout.
    "mhc_paper": BODY_READOUT + ("mhc.phi_post", "mhc.phi_res", "mhc.alpha_res", "mhc.b_res"),
}


def jacobian_wrt(graph: str) -> tuple[str, ...]:
    """The parameters whose Jacobian loop_model.module_jacobian holds for `graph` (VARIANTS' wired, less the left out)."""
    return tuple(p for p in VARIANTS[graph][1] if p not in JACOBIAN_LEFT_OUT.get(graph, ()))


def _jacobian_wrt(tokens, params, cfg, name):
    """d logits / d params[name], nested [T * len(tokens) * vocab (row-major), *shape(name)], ~38 digits."""
    shape = shape_of(params[name])

    def f(flat):
        return flatten(_logits(tokens, dict(params, **{name: unflatten(flat, shape)}), cfg))

    return [unflatten(row, shape) for row in jacobian_at_dps(f, flatten(params[name]))]


@fixture("loop_model.module_jacobian", "fidelity.oracles.derivatives.jacobian_at_dps",
         ["attnres.placement_loop", "attnres.eq2", "attnres.eq3", "mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9",
          "mhc.layout.sliced", "mhc.layout.replicated", "hc.eq5", "hc.eq11", "hc.eq12", "hc.eq13"])
def _loop_module_jacobian():
    base = dict(loop_defaults(), **JACOBIAN_SIZES)
    inputs, expected, lines = {"tokens": list(JACOBIAN_TOKENS)}, {}, []
    for vname, (override, _) in VARIANTS.items():
        cfg = dict(base, **override)
        params = base_params(cfg)
        group, scale = {}, 0
        wired = jacobian_wrt(vname)
        for name in wired:
            J = _jacobian_wrt(JACOBIAN_TOKENS, params, cfg, name)
            group[f"d_logits_d_{name}"] = num(J)
            with precision():
                scale = max([scale] + [abs(v) for v in flatten(J)])
        expected[vname] = group
        inputs[vname] = {"config": _cfg_json(cfg), "params": {k: inp(v) for k, v in params.items()}}
        lines.append(f"{vname}: max over its {len(wired)} parameters of |d logits / d p| = {f10(scale)}.")
    return {
        "derivation": [
            "Per arm graph (VARIANTS: rezero, attnres, mhc sliced and paper, hc dynamic and static) the config "
            "inputs.<graph>.config: the defaults of loop_model.defaults (the spec's), then the sizes "
            + ", ".join(f"{k} = {v}" for k, v in JACOBIAN_SIZES.items()) + ", then the graph's arm fields.",
            "Parameters (inputs.<graph>.params, every one the model has at that config): loop_model.defaults' seeded "
            "builder for these shapes (k/256 multiples, exact in float32 and float64; not the init, where phi = 0, "
            "W = 0 and queries = 0 make gradients legitimately zero).",
            "expected.<graph>.d_logits_d_<p>[r, *shape(p)] = d logits / d p, r = (k * " + str(len(JACOBIAN_TOKENS))
            + " + b) * vocab + v for iteration k, token tokens[b], vocab entry v; for every parameter p wired in the "
            "graph, less those params.left_out names (each held in another graph: params.wrt lists what is here). "
            "The logits are fidelity.oracles.loop_model.loop_logits (60 digits).",
            "Central differences at the oracle's 60 digits, step 1e-20 (fidelity.oracles.derivatives.jacobian_at_dps): "
            "truncation and rounding ~1e-40, so ~38 good digits, stored at 40. The columns of the embed rows of "
            "tokens not in inputs.tokens are exactly 0 (the oracle reads embed[token] only).",
        ] + lines,
        "inputs": inputs,
        "expected": expected,
        "params": {"wrt": {k: list(jacobian_wrt(k)) for k in VARIANTS}, "sizes": dict(JACOBIAN_SIZES),
                   "left_out": {k: list(v) for k, v in JACOBIAN_LEFT_OUT.items()},
                   "jacobian_layout": "[T * len(tokens) * vocab (iteration, token, vocab row-major), *shape of p]",
                   "jacobian_method": "central differences at 60 digits, step 1e-20"},
    }
