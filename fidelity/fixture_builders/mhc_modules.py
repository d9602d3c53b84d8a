"""Fixtures for the mHC residual and the Sinkhorn as users run them: defaults, gradients, every parameter alive.

- mhc.module_defaults: the module at the spec's defaults (t_max, eps, alpha_init, static_init,
  b_post = 0, n = Table 5's 4), with only phi_* written, on a stream state small enough
  (mean(x^2) ~ 1e-20) that RMSNorm's eps shows; and how far each plausible wrong default lands,
  in tolerances (the builder refuses a fixture where one lands under 10 in float64).
- mhc.module_jacobian: a seeded non-trivial point (n = 3, C = 2, a linear body F(v) = W v); out and
  the Jacobians d out / d x, d out / d phi_res, d out / d b_res at 120 digits (stored at 40), both layouts.
- mhc.module_alive: at the same point, for each of the nine parameters a seeded direction of
  stated size and the oracle's max|out(p + d) - out(p)|, both layouts.
- sinkhorn.jacobian_3x3: d M(t_max) / d logits of Eq. 9 at a seeded unconverged 3x3, t_max = 20.

Every default is read from the spec (fidelity.spec.values.spec_value_exact), never typed here.
Seeded values are dyadic rationals (k / 2^m), exact in float32 and float64, so a gate's input is
the oracle's input exactly. The Jacobians are central differences at 120 digits
(fidelity.oracles.derivatives), good to ~70 digits.
"""
from __future__ import annotations

import random

import mpmath
import sympy

from fidelity.fixture_store import f10, fixture, inp, num
from fidelity.oracles import mhc
from fidelity.oracles import sinkhorn as sk
from fidelity.oracles._precision import exact, mp, precision
from fidelity.oracles.derivatives import flatten, jacobian, shape_of, unflatten
from fidelity.spec.values import spec_value_exact

LAYOUTS = ("paper", "sliced")
PARAMS = ("phi_pre", "phi_post", "phi_res", "alpha_pre", "alpha_post", "alpha_res", "b_pre", "b_post", "b_res")
UNWIRED_IN_SLICED = ("phi_pre", "alpha_pre", "b_pre")  # mhc.layout.sliced: H_pre computed, never read
FIELDS = ("out", "H_pre", "H_post", "H_res")
GATE_EPS_MULTIPLE = 64  # the tolerance of the mHC gates (test_mhc_eq3.py's EQ3_TOL): separations are in its units
EPS = {"float32": sympy.Rational(1, 2 ** 23), "float64": sympy.Rational(1, 2 ** 52)}


def _defaults() -> dict:
    """The spec's defaults, exact."""
    return {"t_max": int(spec_value_exact("mhc.table5.tmax")), "eps": spec_value_exact("mhc.table5.eps"),
            "alpha_init": spec_value_exact("mhc.table5.alpha_init"),
            "static_init": spec_value_exact("mhc.init_static_bias"), "n": int(spec_value_exact("mhc.table5.n")),
            "dynamic_init_std": spec_value_exact("mhc.init_dynamic")}


def _draw(rng: random.Random, shape: tuple[int, ...], lo: int, hi: int, den: int):
    """Nested lists of k / den, k uniform in [lo, hi] (dyadic when den is a power of 2)."""
    if not shape:
        return sympy.Rational(rng.randint(lo, hi), den)
    return [_draw(rng, shape[1:], lo, hi, den) for _ in range(shape[0])]


def _shapes(n: int, C: int) -> dict[str, tuple[int, ...]]:
    return mhc.param_shapes(n * C, n)


def _mpf(nested):
    """Nested exact values as mpf at the current precision."""
    return [_mpf(v) for v in nested] if isinstance(nested, (list, tuple)) else mp(nested)


def _run(x, params: dict, W, eps, t_max: int, layout: str) -> dict:
    """mhc.residual_mpf on exact inputs, at the shared precision."""
    with precision():
        return mhc.residual_mpf(_mpf(x), {k: _mpf(v) for k, v in params.items()}, _mpf(W), mp(exact(eps)), t_max,
                                layout)


def _max_rel(a, b):
    """max_i |a_i - b_i| / |b_i| over nested values (mpf)."""
    with precision():
        return max(abs(mp(u) - mp(v)) / abs(mp(v)) for u, v in zip(flatten(a), flatten(b)))


def _max_abs(a, b):
    with precision():
        return max(abs(mp(u) - mp(v)) for u, v in zip(flatten(a), flatten(b)))


# ---- defaults as shipped ----------------------------------------------------------------------

DEFAULTS_SEED = 14001
DEFAULTS_C = 2
X_SCALE = sympy.Rational(1, 2 ** 33)  # x = k/4 * 2^-33 ~ 1e-10: mean(x^2) ~ 1e-20, eps's own size


def _default_params(n: int, d: dict, static_init=None, alpha=None, b_post=None) -> dict:
    s = d["static_init"] if static_init is None else static_init
    a = d["alpha_init"] if alpha is None else alpha
    bp = 0 if b_post is None else b_post
    return {"alpha_pre": a, "alpha_post": a, "alpha_res": a, "b_pre": [s] * n, "b_post": [bp] * n,
            "b_res": [[s if i == j else 0 for j in range(n)] for i in range(n)]}


def _defaults_case() -> dict:
    d = _defaults()
    n, C = d["n"], DEFAULTS_C
    rng = random.Random(DEFAULTS_SEED)
    shapes = _shapes(n, C)
    phi = {k: _draw(rng, shapes[k], -8, 8, 1) for k in ("phi_pre", "phi_post", "phi_res")}
    x = [[v * X_SCALE for v in row] for row in _draw(rng, (n, C), -8, 8, 4)]
    W = {"paper": _draw(rng, (C, C), -8, 8, 8), "sliced": _draw(rng, (n * C, n * C), -8, 8, 8)}
    return {"d": d, "n": n, "C": C, "phi": phi, "x": x, "W": W}


# name -> (what changes, keyword overrides of _wrong); each a default a subject could plausibly ship
WRONG_DEFAULTS = {
    "eps_1e-6": ("RMSNorm eps 1e-6 (the authors' code's norm_eps)", {"eps": "1e-6"}),
    "eps_1e-5": ("RMSNorm eps 1e-5 (a common LayerNorm default)", {"eps": "1e-5"}),
    "eps_0": ("RMSNorm eps 0 (the formula with no eps)", {"eps": 0}),
    "t_max_10": ("t_max 10 (the authors' code's default)", {"t_max": 10}),
    "t_max_19": ("t_max 19 (one step short)", {"t_max": 19}),
    "t_max_21": ("t_max 21 (one step over)", {"t_max": 21}),
    "alpha_0": ("alpha_init 0 (the dynamic part off)", {"alpha": 0}),
    "alpha_0.1": ("alpha_init 0.1", {"alpha": "0.1"}),
    "alpha_0.001": ("alpha_init 0.001", {"alpha": "0.001"}),
    "static_5": ("static_init 5", {"static_init": 5}),
    "static_1": ("static_init 1", {"static_init": 1}),
    "b_post_1": ("b_post initialised to 1 instead of 0 (H_post = 2 sigma(1))", {"b_post": 1}),
    "b_post_static": ("b_post initialised to static_init like b_pre (H_post = 2 sigma(10))", {"b_post": "static"}),
}


def _at(case: dict, layout: str, eps=None, t_max=None, alpha=None, static_init=None, b_post=None) -> dict:
    d = case["d"]
    if b_post == "static":
        b_post = d["static_init"] if static_init is None else static_init
    params = dict(case["phi"]) | _default_params(case["n"], d, static_init, None if alpha is None else exact(alpha),
                                                 b_post)
    return _run(case["x"], params, case["W"][layout], d["eps"] if eps is None else eps,
                d["t_max"] if t_max is None else t_max, layout)


def log_scale(H) -> mpmath.mpf:
    """max(1, max_ij |log H_ij|): the size of the log-domain iterate, whose absolute rounding at every
    normalisation is a RELATIVE error of the entry (the gate scales H_res's tolerance by it)."""
    with precision():
        return max(mpmath.mpf(1), max(abs(mpmath.log(mp(v))) for v in flatten(H)))


def _separation(wrong: dict, right: dict, dtype: str):
    """max over FIELDS of the relative distance, in units of the gate's tolerance: GATE_EPS_MULTIPLE eps(dtype),
    times log_scale(H_res) for H_res."""
    with precision():
        unit = GATE_EPS_MULTIPLE * mp(EPS[dtype])
        return max(_max_rel(wrong[f], right[f]) / (unit * (log_scale(right["H_res"]) if f == "H_res" else 1))
                   for f in FIELDS)


@fixture("mhc.module_defaults", "fidelity.oracles.mhc.residual_mpf",
         ["mhc.table5.tmax", "mhc.table5.eps", "mhc.table5.alpha_init", "mhc.table5.n", "mhc.init_static_bias",
          "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.eq3"])
def _mhc_module_defaults():
    case = _defaults_case()
    d, n, C = case["d"], case["n"], case["C"]
    expected, lines = {}, []
    for layout in LAYOUTS:
        right = _at(case, layout)
        seps = {}
        for name, (_, kw) in WRONG_DEFAULTS.items():
            wrong = _at(case, layout, **kw)
            seps[name] = {dt: _separation(wrong, right, dt) for dt in ("float64", "float32")}
            if not seps[name]["float64"] >= 10:
                raise ValueError(f"mhc.module_defaults ({layout}): wrong default {name} lies only "
                                 f"{f10(seps[name]['float64'])} float64 tolerances away: the fixture cannot see it")
        expected[layout] = {f: num(right[f]) for f in FIELDS} | {"H_res_log_scale": num(log_scale(right["H_res"])),
            "wrong_default_separation": {name: {dt: num(v) for dt, v in s.items()} for name, s in seps.items()}}
        lines.append(f"{layout}: max|log H_res| = {f10(log_scale(right['H_res']))}; each wrong default's distance "
                     f"from these outputs, in tolerances ({GATE_EPS_MULTIPLE} eps, H_res's times max|log H_res|; "
                     "float64 / float32): " + "; ".join(f"{name} {f10(s['float64'])} / {f10(s['float32'])}"
                                                        for name, s in seps.items()) + ".")
    invisible32 = sorted({name for layout in LAYOUTS for name in WRONG_DEFAULTS
                          if not float(expected[layout]["wrong_default_separation"][name]["float32"]["float64"]) >= 10})
    return {
        "derivation": [
            f"The module as shipped, n = {n} (Table 5), C = {C}: t_max = {d['t_max']}, eps = {f10(d['eps'])}, "
            f"alpha_pre = alpha_post = alpha_res = {f10(d['alpha_init'])}, b_pre = {d['static_init']}, "
            f"b_res = {d['static_init']} I, b_post = 0 (every default read from the spec's value: fields).",
            "Only phi_pre, phi_post, phi_res are written (seeded integers in [-8, 8]): at their shipped init 0",
            "alpha, eps and (through H~res) t_max would have no effect; the body is linear, F(v) = W v.",
            "x = k/4 * 2^-33 (k in [-8, 8]), so mean(x^2) = " + f10(sum(v * v for r in case["x"] for v in r) / (n * C))
            + " sits beside eps = 1e-20: x' = x / sqrt(mean(x^2) + eps) shows eps = 0 and eps = 1e-6 alike.",
            "H_pre = sigma(10 + alpha x' phi_pre), H_post = 2 sigma(alpha x' phi_post), H_res = SK(10 I + alpha "
            "mat(x' phi_res)), out[j] = sum_i H_res[j, i] x[i] + H_post[j] y_j (Eq. 3, both layouts).",
        ] + lines + [
            "Under 10 float32 tolerances (seen in float64 only): " + (", ".join(invisible32) or "none") + ".",
        ],
        "inputs": {"x": inp(case["x"]), "W_paper": inp(case["W"]["paper"]), "W_sliced": inp(case["W"]["sliced"])}
                  | {k: inp(v) for k, v in case["phi"].items()},
        "expected": expected,
        "params": {"n": n, "C": C, "t_max": d["t_max"], "eps": inp(d["eps"]), "alpha_init": inp(d["alpha_init"]),
                   "static_init": inp(d["static_init"]), "b_post": 0, "seed": DEFAULTS_SEED,
                   "separation_unit": f"{GATE_EPS_MULTIPLE} eps of the dtype, relative (H_res: times max(1, max|log "
                                      f"H_res|)), max over {list(FIELDS)}",
                   "wrong_defaults": {name: what for name, (what, _) in WRONG_DEFAULTS.items()}},
    }


# ---- a seeded non-trivial point: Jacobians, every parameter alive -----------------------------

POINT_SEED = 14002
POINT_N, POINT_C = 3, 2


def point_case() -> dict:
    """x, the nine parameters and the bodies' W at the seeded point (n = 3, C = 2), exact dyadic rationals."""
    n, C = POINT_N, POINT_C
    rng = random.Random(POINT_SEED)
    shapes = _shapes(n, C)
    params = {}
    for name in PARAMS:
        if name.startswith("phi"):
            params[name] = _draw(rng, shapes[name], -8, 8, 8)  # [-1, 1] by 1/8
        elif name.startswith("alpha"):
            params[name] = _draw(rng, (), 2, 8, 8)  # [1/4, 1]: the dynamic part matters
        elif name == "b_res":
            params[name] = _draw(rng, shapes[name], -4, 4, 4)  # [-1, 1]: H~res far from the stiff 10 I
        else:
            params[name] = _draw(rng, shapes[name], -8, 8, 8)
    x = _draw(rng, (n, C), -8, 8, 4)
    W = {"paper": _draw(rng, (C, C), -8, 8, 8), "sliced": _draw(rng, (n * C, n * C), -8, 8, 8)}
    return {"n": n, "C": C, "x": x, "params": params, "W": W, "eps": _defaults()["eps"], "t_max": _defaults()["t_max"]}


def _point_inputs(case: dict) -> dict:
    return ({"x": inp(case["x"]), "W_paper": inp(case["W"]["paper"]), "W_sliced": inp(case["W"]["sliced"])}
            | {k: inp(v) for k, v in case["params"].items()})


JACOBIAN_WRT = ("x", "phi_res", "b_res")


def _jacobian_wrt(case: dict, layout: str, name: str):
    """d out / d name at the point, nested [nC, *shape(name)], 120 digits."""
    x, params, W = case["x"], case["params"], case["W"][layout]
    target = x if name == "x" else params[name]
    shape = shape_of(target)

    def f(flat):
        xx = unflatten(flat, shape) if name == "x" else [[mp(v) for v in r] for r in x]
        pp = {k: _mpf(v) for k, v in params.items()}
        if name != "x":
            pp[name] = unflatten(flat, shape)
        return flatten(mhc.residual_mpf(xx, pp, _mpf(W), mp(exact(case["eps"])), case["t_max"], layout)["out"])

    J = jacobian(f, flatten(target))
    return [unflatten(row, shape) for row in J]


@fixture("mhc.module_jacobian", "fidelity.oracles.derivatives.jacobian",
         ["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.layout.sliced", "mhc.layout.replicated"])
def _mhc_module_jacobian():
    case = point_case()
    expected, lines = {}, []
    for layout in LAYOUTS:
        res = _run(case["x"], case["params"], case["W"][layout], case["eps"], case["t_max"], layout)
        group = {"out": num(res["out"]), "H_res": num(res["H_res"])}
        for name in JACOBIAN_WRT:
            J = _jacobian_wrt(case, layout, name)
            group[f"d_out_d_{name}"] = num(J)
            with precision():
                scale = max(abs(mp(v)) for v in flatten(J))
            lines.append(f"{layout}: max|d out / d {name}| = {f10(scale)}.")
        expected[layout] = group
    return {
        "derivation": [
            f"n = {case['n']}, C = {case['C']}, eps = {f10(case['eps'])}, t_max = {case['t_max']} (the spec's defaults), a "
            f"seeded point (seed {POINT_SEED}): phi in [-1, 1] by 1/8, alpha in [1/4, 1], b_pre, b_post in [-1, 1] by "
            "1/8, b_res in [-1, 1] by 1/4 (far from the stiff 10 I), x in [-2, 2] by 1/4; linear body F(v) = W v.",
            "out[j] = sum_i H_res[j, i] x[i] + H_post[j] y_j: paper y_j = W (H_pre x) for every j; sliced y = W vec(x),",
            "read as n slices of C. The Jacobian d out[k] / d p[i] (out flattened row-major to nC) is central",
            "differences of fidelity.oracles.mhc.residual_mpf at 120 digits, step 1e-40 (error ~1e-80), stored at 40.",
        ] + lines,
        "inputs": _point_inputs(case),
        "expected": expected,
        "params": {"n": case["n"], "C": case["C"], "eps": inp(case["eps"]), "t_max": case["t_max"], "seed": POINT_SEED,
                   "body": "linear: F(v) = W v (W_paper C x C on u = H_pre x; W_sliced nC x nC on vec x)",
                   "jacobian_layout": "[nC (out row-major), *shape of the tensor]",
                   "jacobian_method": "central differences at 120 digits, step 1e-40"},
    }


ALIVE_SEED = 14003
ALIVE_SIZE = sympy.Rational(1, 8)  # every entry of a direction is +-1/8 (alpha: one +-1/8)


def alive_directions(case: dict) -> dict:
    """name -> a seeded direction of the parameter's shape, every entry +-ALIVE_SIZE."""
    rng = random.Random(ALIVE_SEED)
    shapes = _shapes(case["n"], case["C"])

    def draw(shape):
        if not shape:
            return ALIVE_SIZE * rng.choice((-1, 1))
        return [draw(shape[1:]) for _ in range(shape[0])]

    return {name: draw(shapes[name]) for name in PARAMS}


def _add(a, b):
    return [_add(u, v) for u, v in zip(a, b)] if isinstance(a, list) else exact(a) + exact(b)


@fixture("mhc.module_alive", "fidelity.oracles.mhc.residual_mpf",
         ["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.params", "mhc.layout.sliced", "mhc.layout.replicated"])
def _mhc_module_alive():
    case = point_case()
    directions = alive_directions(case)
    expected, lines = {}, []
    for layout in LAYOUTS:
        base = _run(case["x"], case["params"], case["W"][layout], case["eps"], case["t_max"], layout)
        changes = {}
        for name in PARAMS:
            moved = dict(case["params"]) | {name: _add(case["params"][name], directions[name])}
            after = _run(case["x"], moved, case["W"][layout], case["eps"], case["t_max"], layout)
            changes[name] = _max_abs(after["out"], base["out"])
        for name in UNWIRED_IN_SLICED if layout == "sliced" else ():
            with precision():
                if changes[name] != 0:
                    raise ValueError(f"sliced layout: {name} is unwired by the spec but moves out by {changes[name]}")
        wired = {k: v for k, v in changes.items() if not (layout == "sliced" and k in UNWIRED_IN_SLICED)}
        expected[layout] = {"out": num(base["out"]), "max_change": {k: num(v) for k, v in wired.items()}}
        lines.append(f"{layout}: max|out(p + d) - out(p)| = " + ", ".join(f"{k} {f10(v)}" for k, v in wired.items())
                     + ("; phi_pre, alpha_pre, b_pre move it by exactly 0 (unwired, mhc.layout.sliced)"
                        if layout == "sliced" else "") + ".")
    return {
        "derivation": [
            "The point of mhc.module_jacobian (seed " + str(POINT_SEED) + "). For each of the nine parameters p, a seeded",
            f"direction d (seed {ALIVE_SEED}) of p's shape with every entry +-{ALIVE_SIZE}; the oracle's",
            "max_k |out_k(p + d) - out_k(p)| with every other parameter at the point. A parameter the forward",
            "never reads moves out by 0; a gate reads the subject's change over this one (>= 1/2 passes).",
        ] + lines,
        "inputs": _point_inputs(case) | {"directions": {k: inp(v) for k, v in directions.items()}},
        "expected": expected,
        "params": {"n": case["n"], "C": case["C"], "eps": inp(case["eps"]), "t_max": case["t_max"],
                   "direction_size": inp(ALIVE_SIZE), "seed": ALIVE_SEED,
                   "unwired_in_sliced": list(UNWIRED_IN_SLICED),
                   "body": "linear: F(v) = W v (W_paper C x C on u = H_pre x; W_sliced nC x nC on vec x)"},
    }


# ---- the Sinkhorn's Jacobian ------------------------------------------------------------------

SK_JACOBIAN_SEED = 14004


def sinkhorn_jacobian_logits() -> list[list[sympy.Rational]]:
    """A seeded 3x3 at logit scale ~3 (k/4, |k| <= 20): M(20) still unconverged, so each step's axis shows."""
    return _draw(random.Random(SK_JACOBIAN_SEED), (3, 3), -20, 20, 4)


@fixture("sinkhorn.jacobian_3x3", "fidelity.oracles.derivatives.jacobian", ["mhc.eq9", "mhc.table5.tmax"])
def _sk_jacobian():
    logits = sinkhorn_jacobian_logits()
    t_max = int(spec_value_exact("mhc.table5.tmax"))
    n = len(logits)

    def f(flat):
        return flatten(sk.sinkhorn_mpf(unflatten(flat, (n, n)), t_max))

    J = jacobian(f, flatten(logits))
    rows = [unflatten(row, (n, n)) for row in J]  # one [k][l] block per output entry (i, j), row-major
    J4 = [rows[i * n:(i + 1) * n] for i in range(n)]
    M = sk.sinkhorn(logits, t_max)
    defects = sk.row_col_defects(M)
    with precision():
        row_sums = max(abs(mpmath.fsum(J[i * n + j][k] for j in range(n))) for i in range(n) for k in range(n * n))
        scale = max(abs(v) for row in J for v in row)
    return {
        "derivation": [
            f"logits = k/4 (seed {SK_JACOBIAN_SEED}, |k| <= 20), t_max = {t_max} (Table 5, from the spec).",
            "J[i][j][k][l] = d M(t_max)[i, j] / d logits[k, l]: central differences of Eq. 9 (column, then row",
            "normalisation, t_max times) at 120 digits with step 1e-40 (error ~1e-80), stored at 40 digits.",
            "M(20) is unconverged: max|column sum - 1| = " + f10(defects["col"]) + ", so the order and the axis of",
            "every step shows in the Jacobian. Rows of M sum to 1 after the final row pass, so sum_j J[i][j][k][l] = 0:",
            "max |sum_j J[i][j][k][l]| = " + mpmath.nstr(row_sums, 3) + " (central-difference error); max|J| = "
            + f10(scale) + ".",
        ],
        "inputs": {"logits": inp(logits)},
        "expected": {"M_t_max": num(M), "jacobian": num(J4), "col_defect": num(defects["col"])},
        "params": {"t_max": t_max, "order": "column normalisation first, then row (Eq. 9)",
                   "jacobian_layout": "[i, j, k, l] = d M[i, j] / d logits[k, l]",
                   "jacobian_method": "central differences at 120 digits, step 1e-40"},
    }
