"""Fixtures for the Hyper-Connections module gates (issue 14): defaults as shipped, every parameter alive,
the oracle's Jacobian. Everything is exact sympy (fidelity.oracles.hc), evaluated to 40 digits.

hc.module_defaults   the module as factory(n, d, layer_index) builds it, with only its dynamic weights
                     written; every default (scale_init, the LayerNorm's eps and affine init, B = 1,
                     A_m = e_(k mod n), A_r = I, dynamic = True) is the spec's and stays in play. The builder
                     refuses a fixture on which a plausible wrong default lands fewer than
                     MIN_SEPARATION float32 tolerances away.
hc.module_dynamic    DHC with every parameter written to seeded non-trivial values, and for each
hc.module_static     parameter block a seeded direction of stated size with the oracle's max |out change|
                     along it; the dynamic one also holds the exact Jacobian d out / d H.
"""
from __future__ import annotations

import random

import sympy

from fidelity.fixture_store import f10, fixture, inp, num
from fidelity.oracles import hc
from fidelity.oracles._precision import exact, mp, precision
from fidelity.spec.values import spec_value_exact

# ---- hc.module_defaults --------------------------------------------------------------------------

DEFAULTS_CASE = {
    "n": 3,
    "d": 4,
    "layer_index": 5,  # 5 mod 3 = 2: A_m = e_2 reads stream 2
    # stream 1 has mean 0 and variance 5/2097152 = 2.4e-6, beside eps = 1e-5: its H_bar, so its B(H)
    # entry, moves with eps; the other streams have O(1) variance
    "H": [[1, -2, "1/2", "3/2"], ["1/512", "-1/512", "1/1024", "-1/1024"], [-1, 0, 2, "1/4"]],
    "W_T": [["1/2", 0, 1, "-1/4"], [-1, 1, 0, "1/2"], [0, "1/4", "1/2", 1], ["1/4", -1, 0, "1/2"]],
    "dynamic_alpha_fn": [[1, "-1/2", "1/4", "3/4"], ["-1/2", 1, "1/2", -1], ["1/4", "1/4", -1, "1/2"],
                         [1, "1/2", "-3/4", "1/4"]],
    # H_bar row 1 . W_beta = 0.69 at eps 1e-5 (1.33 at 1e-6): tanh is not saturated, so eps shows in B(H)_1
    "dynamic_beta_fn": ["1/2", "-1/2", "1/4", "-1/4"],
}
MIN_SEPARATION = 100
"""A wrong default must move out by at least this many float32 tolerances (64 eps, floor 1) of the gate."""
F32_TOL_RTOL = sympy.Integer(64) / 2 ** 23  # the gate's DYNAMIC_OUT_TOL at float32: 64 eps, floor 1


def _mat(M) -> sympy.Matrix:
    return sympy.Matrix([[exact(v) for v in r] for r in M])


def _defaults() -> dict:
    """The spec's defaults: scale_init, LayerNorm eps, B's init value, dynamic = True (hc.dhc_default)."""
    return {"scale_init": spec_value_exact("hc.alg2.scale_init"), "eps": spec_value_exact("hc.alg2.layer_norm_eps"),
            "beta_init": spec_value_exact("hc.eq14.static_beta"), "dynamic": True, "A_r_diag": sympy.Integer(1),
            "index_shift": 0, "ln_weight": sympy.Integer(1), "ln_bias": sympy.Integer(0)}


def _defaults_out(c: dict, **wrong) -> sympy.Matrix:
    """out of the module built with the given defaults (the spec's, overridden by `wrong`) and W written."""
    v = _defaults() | wrong
    n, d, k = c["n"], c["d"], c["layer_index"]
    init = hc.eq14_init(n, k + v["index_shift"])
    alpha = sympy.Matrix.hstack(init["A_m"], v["A_r_diag"] * init["A_r"])
    params = {"static_beta": [v["beta_init"]] * n, "static_alpha": alpha.tolist(),
              "dynamic_alpha_fn": c["dynamic_alpha_fn"], "dynamic_beta_fn": c["dynamic_beta_fn"],
              "alpha_scale": v["scale_init"], "beta_scale": v["scale_init"],
              "layer_norm.weight": [v["ln_weight"]] * d, "layer_norm.bias": [v["ln_bias"]] * d}
    return hc.module_layer(params, c["H"], hc.linear_T(_mat(c["W_T"])), v["eps"], v["dynamic"])["out"]


WRONG_DEFAULTS = {
    "scale_init_0.1": ("scale_init 1/10 instead of 1/100", {"scale_init": sympy.Rational(1, 10)}),
    "scale_init_1": ("scale_init 1", {"scale_init": sympy.Integer(1)}),
    "scale_init_0.001": ("scale_init 1/1000", {"scale_init": sympy.Rational(1, 1000)}),
    "scale_init_0": ("scale_init 0 (the dynamic part switched off at init)", {"scale_init": sympy.Integer(0)}),
    "eps_1e-6": ("LayerNorm eps 1e-6 instead of 1e-5", {"eps": sympy.Rational(1, 10 ** 6)}),
    "eps_1e-8": ("LayerNorm eps 1e-8", {"eps": sympy.Rational(1, 10 ** 8)}),
    "eps_1e-12": ("LayerNorm eps 1e-12", {"eps": sympy.Rational(1, 10 ** 12)}),
    "eps_1e-4": ("LayerNorm eps 1e-4", {"eps": sympy.Rational(1, 10 ** 4)}),
    "eps_1e-3": ("LayerNorm eps 1e-3", {"eps": sympy.Rational(1, 10 ** 3)}),
    "static_by_default": ("dynamic = False by default (static HC)", {"dynamic": False}),
    "beta_init_0.5": ("B initialised to 1/2", {"beta_init": sympy.Rational(1, 2)}),
    "beta_init_0": ("B initialised to 0", {"beta_init": sympy.Integer(0)}),
    "A_r_half": ("A_r initialised to I / 2", {"A_r_diag": sympy.Rational(1, 2)}),
    "A_m_shifted": ("A_m = e_((k + 1) mod n)", {"index_shift": 1}),
    "ln_weight_0": ("LayerNorm weight initialised to 0", {"ln_weight": sympy.Integer(0)}),
    "ln_bias_1": ("LayerNorm bias initialised to 1", {"ln_bias": sympy.Integer(1)}),
}


def _separation(right: sympy.Matrix, wrong: sympy.Matrix):
    """max |wrong - right| / (float32 tolerance at max(1, |right|)), as an mpf."""
    with precision():
        return max(abs(mp(w) - mp(r)) / (mp(F32_TOL_RTOL) * max(1, abs(mp(r)))) for r, w in zip(right, wrong))


@fixture("hc.module_defaults", "fidelity.oracles.hc.module_layer",
         ["hc.alg2.scale_init", "hc.alg2.layer_norm_eps", "hc.eq14.static_beta", "hc.dhc_default", "hc.eq14",
          "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.alg2"])
def _hc_module_defaults():
    c = DEFAULTS_CASE
    v = _defaults()
    out = _defaults_out(c)
    predictions, seps = {}, {}
    for name, (description, wrong) in WRONG_DEFAULTS.items():
        w = _defaults_out(c, **wrong)
        seps[name] = _separation(out, w)
        if seps[name] < MIN_SEPARATION:
            raise ValueError(f"hc.module_defaults: the wrong default {name!r} lands only {f10(seps[name])} float32 "
                             f"tolerances from the right output (need >= {MIN_SEPARATION}): choose another case")
        predictions[f"hc.defaults.{name}"] = {"description": description, "field": "out", **num(w.tolist())}
    closest = min(seps, key=seps.get)
    Hbar1 = hc.layer_norm_rows(_mat(c["H"]), v["eps"]).row(1)
    row1 = list(_mat(c["H"]).row(1))
    var1 = sum((x - sum(row1) / len(row1)) ** 2 for x in row1) / len(row1)
    return {
        "derivation": [
            f"factory(n = {c['n']}, d = {c['d']}, layer_index = {c['layer_index']}) with no optional argument, "
            "at the spec's defaults:",
            f"DHC (hc.dhc_default), s_alpha = s_beta = scale_init = {v['scale_init']} (hc.alg2.scale_init), "
            f"LayerNorm eps = {v['eps']} (hc.alg2.layer_norm_eps), weight 1, bias 0,",
            f"B = {v['beta_init']} * ones (hc.eq14.static_beta), A_m = e_(5 mod 3) = e_2, A_r = I (hc.eq14).",
            "Only dynamic_alpha_fn [d, n+1] and dynamic_beta_fn [d] are written (to the inputs): at their zero init",
            "tanh(H_bar 0) = 0 would hide scale_init and eps. Body T(h) = h W_T.",
            "Stream 1 = [1/512, -1/512, 1/1024, -1/1024] has mean 0 and variance " + str(var1) + " = "
            + f10(var1) + ", beside eps,",
            "so H_bar row 1 = [" + ", ".join(f10(x) for x in Hbar1) + "] moves with eps, and B(H)_1 with it.",
            "out = B(H)^T T(h_0) + A_r(H)^T H, h_0 = A_m(H)^T H (Eqs. 3-5, 10-13).",
            f"Each of {len(WRONG_DEFAULTS)} wrong defaults (predictions) lands >= {MIN_SEPARATION} float32 "
            f"tolerances (64 eps, floor 1) away; the closest is {closest} at {f10(seps[closest])}.",
        ],
        "inputs": {k: inp(c[k]) for k in ("H", "W_T", "dynamic_alpha_fn", "dynamic_beta_fn")}
        | {"n": c["n"], "d": c["d"], "layer_index": c["layer_index"]},
        "expected": {"out": num(out.tolist())},
        "params": {"scale_init": str(v["scale_init"]), "eps": str(v["eps"]), "static_beta": str(v["beta_init"]),
                   "dynamic": True, "T": "h W_T",
                   "separation_f32_tolerances": {k: f10(s) for k, s in seps.items()}},
        "predictions": predictions,
    }


# ---- hc.module_dynamic / hc.module_static ----------------------------------------------------------

ALIVE_SEED = 20261214
DIRECTION_SIZE = sympy.Rational(1, 16)
"""Each direction is DIRECTION_SIZE times seeded entries in {-1, -1/2, 1/2, 1} on one parameter block."""
MODULE_CASE = {
    "n": 2,
    "d": 3,
    "layer_index": 1,
    "H": [[1, 2, -1], [0, 1, 3]],
    "W_T": [["1/2", 0, 1], [-1, 1, 0], [0, "1/4", "1/2"]],
}
# parameter blocks: name -> (parameter, column slice of a 2-D parameter or None for the whole)
BLOCKS_STATIC = {
    "static_beta": ("static_beta", None),
    "static_alpha.A_m": ("static_alpha", (0, 1)),
    "static_alpha.A_r": ("static_alpha", (1, None)),
}
BLOCKS_DYNAMIC = BLOCKS_STATIC | {
    "dynamic_alpha_fn.W_m": ("dynamic_alpha_fn", (0, 1)),
    "dynamic_alpha_fn.W_r": ("dynamic_alpha_fn", (1, None)),
    "dynamic_beta_fn": ("dynamic_beta_fn", None),
    "alpha_scale": ("alpha_scale", None),
    "beta_scale": ("beta_scale", None),
    "layer_norm.weight": ("layer_norm.weight", None),
    "layer_norm.bias": ("layer_norm.bias", None),
}


def _draw(rng: random.Random, shape: tuple, scale) -> list:
    """Seeded dyadic entries scale * j/8, j in -8..8 (exact in float32)."""
    if not shape:
        return scale * sympy.Rational(rng.randint(-8, 8), 8)
    return [_draw(rng, shape[1:], scale) for _ in range(shape[0])]


def _unit(rng: random.Random, shape: tuple) -> list:
    if not shape:
        return rng.choice([sympy.Integer(-1), sympy.Rational(-1, 2), sympy.Rational(1, 2), sympy.Integer(1)])
    return [_unit(rng, shape[1:]) for _ in range(shape[0])]


def _add(a, b):
    if isinstance(a, list):
        return [_add(x, y) for x, y in zip(a, b)]
    return exact(a) + exact(b)


def _shape(v) -> tuple:
    return (len(v),) + _shape(v[0]) if isinstance(v, list) else ()


def _base_params(dynamic: bool) -> dict:
    """Eq. 14's init at layer k plus seeded non-trivial offsets; dynamic scales 1/4 and 3/8 so the dynamic
    terms are O(1/10) of the output, not O(1/100)."""
    c = MODULE_CASE
    n, d, k = c["n"], c["d"], c["layer_index"]
    rng = random.Random(ALIVE_SEED + int(dynamic))
    init = hc.eq14_init(n, k)
    alpha0 = sympy.Matrix.hstack(init["A_m"], init["A_r"]).tolist()
    p = {"static_beta": _add([1] * n, _draw(rng, (n,), sympy.Rational(1, 4))),
         "static_alpha": _add(alpha0, _draw(rng, (n, n + 1), sympy.Rational(1, 4)))}
    if dynamic:
        p |= {"dynamic_alpha_fn": _draw(rng, (d, n + 1), sympy.Rational(1, 2)),
              "dynamic_beta_fn": _draw(rng, (d,), sympy.Rational(1, 2)),
              "alpha_scale": sympy.Rational(1, 4), "beta_scale": sympy.Rational(3, 8),
              "layer_norm.weight": _add([1] * d, _draw(rng, (d,), sympy.Rational(1, 4))),
              "layer_norm.bias": _draw(rng, (d,), sympy.Rational(1, 4))}
    return p


def _direction(base: dict, block: tuple, rng: random.Random):
    """A direction on `block` (parameter, column slice): the full parameter's shape, zero outside the block."""
    name, cols = block
    shape = _shape(base[name])
    u = _unit(rng, shape)
    if cols is not None:
        lo, hi = cols
        hi = shape[1] if hi is None else hi
        u = [[x if lo <= j < hi else sympy.Integer(0) for j, x in enumerate(row)] for row in u]
    return u, name


def _scaled(v, s):
    return [_scaled(x, s) for x in v] if isinstance(v, list) else s * exact(v)


def _module_fixture(dynamic: bool) -> dict:
    c = MODULE_CASE
    blocks = BLOCKS_DYNAMIC if dynamic else BLOCKS_STATIC
    base = _base_params(dynamic)
    eps = spec_value_exact("hc.alg2.layer_norm_eps") if dynamic else None
    T = hc.linear_T(_mat(c["W_T"]))
    out = hc.module_layer(base, c["H"], T, eps, dynamic)["out"]
    rng = random.Random(ALIVE_SEED + 10 + int(dynamic))
    directions, changes, lines = {}, {}, []
    for block_name, block in blocks.items():
        u, pname = _direction(base, block, rng)
        moved = dict(base)
        moved[pname] = _add(base[pname], _scaled(u, DIRECTION_SIZE))
        out2 = hc.module_layer(moved, c["H"], T, eps, dynamic)["out"]
        with precision():
            change = max(abs(mp(a) - mp(b)) for a, b in zip(out2, out))
        if not change > 0:
            raise ValueError(f"hc.module_{'dynamic' if dynamic else 'static'}: moving {block_name} does not move out")
        directions[block_name] = inp(u)
        changes[block_name] = num(change)
        lines.append(f"{block_name}: max |out change| = {f10(change)}.")
    expected = {"out": num(out.tolist()), "change": changes}
    derivation = [
        f"{'DHC' if dynamic else 'Static HC'}, n = {c['n']}, d = {c['d']}, layer k = {c['layer_index']}, "
        f"body T(h) = h W_T, every parameter written (params: Eq. 14's init plus seeded offsets"
        + (", s_alpha = 1/4, s_beta = 3/8, LayerNorm eps = the spec's 1e-5)." if dynamic else ")."),
        f"Each block (a parameter, or a column block of static_alpha [A_m | A_r] / dynamic_alpha_fn [W_m | W_r])",
        f"is moved by {DIRECTION_SIZE} times its direction (seeded entries in {{-1, -1/2, 1/2, 1}}, zero outside",
        "the block); the oracle's max |out(base + step) - out(base)| for each:",
    ] + lines
    if dynamic:
        J = hc.module_jacobian_wrt_H(base, c["H"], T, eps, True)
        expected["jacobian_H"] = num(J)
        derivation.append("jacobian_H[i*d + j][p*d + q] = d out[i, j] / d H[p, q] at H, by exact sympy "
                          "differentiation through the LayerNorm, tanh, the mixing and T.")
    return {
        "derivation": derivation,
        "inputs": {"H": inp(c["H"]), "W_T": inp(c["W_T"]), "n": c["n"], "d": c["d"], "layer_index": c["layer_index"],
                   "params": {k: inp(v) for k, v in base.items()}, "directions": directions},
        "expected": expected,
        "params": {"direction_size": str(DIRECTION_SIZE), "seed": ALIVE_SEED, "T": "h W_T",
                   "blocks": {k: {"parameter": p, "columns": list(cols) if cols else None}
                              for k, (p, cols) in blocks.items()}}
        | ({"eps": str(eps)} if dynamic else {}),
    }


@fixture("hc.module_dynamic", "fidelity.oracles.hc.module_layer",
         ["hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.eq3", "hc.eq4", "hc.eq5", "hc.alg2"])
def _hc_module_dynamic():
    return _module_fixture(True)


@fixture("hc.module_static", "fidelity.oracles.hc.module_layer", ["hc.eq1", "hc.eq2", "hc.eq3", "hc.eq4", "hc.eq5"])
def _hc_module_static():
    return _module_fixture(False)
