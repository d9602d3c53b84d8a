"""The high-precision Jacobians (fidelity.oracles.derivatives) against closed forms, and the generic residual oracle."""
import mpmath
import sympy

from fidelity.fixtures import mhc_modules as mm
from fidelity.oracles import cases, mhc
from fidelity.oracles import sinkhorn as sk
from fidelity.oracles._precision import exact, mp, precision
from fidelity.oracles.derivatives import flatten, jacobian, jacobian_at_dps, shape_of, unflatten


def test_flatten_and_unflatten_round_trip():
    nested = [[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]]
    assert shape_of(nested) == (2, 3, 2)
    assert unflatten(flatten(nested), (2, 3, 2)) == nested
    assert unflatten([5], ()) == 5


def test_jacobian_of_a_closed_form_to_60_digits():
    a, b = sympy.symbols("a b")
    exprs = [a ** 2 * b, sympy.exp(b) / (1 + a), sympy.sqrt(a * a + b * b + 1)]
    point = {a: sympy.Rational(3, 2), b: sympy.Rational(-1, 3)}
    want = [[sympy.diff(e, v).subs(point) for v in (a, b)] for e in exprs]

    def f(x):
        return [x[0] ** 2 * x[1], mpmath.exp(x[1]) / (1 + x[0]), mpmath.sqrt(x[0] ** 2 + x[1] ** 2 + 1)]

    J = jacobian(f, [point[a], point[b]])
    with mpmath.workdps(80):
        worst = max(abs(J[k][i] - mp(want[k][i])) for k in range(3) for i in range(2))
    assert worst < mpmath.mpf("1e-60")


def test_jacobian_of_an_oracle_that_sets_its_own_precision_is_good_to_35_digits():
    """An oracle inside precision() (DPS = 60) caps the digits: jacobian_at_dps still gets ~38 of them."""
    a, b = sympy.symbols("a b")
    exprs = [sympy.exp(a) * sympy.tanh(b), a / sympy.sqrt(a * a + b * b + sympy.Rational(1, 10 ** 6))]
    point = {a: sympy.Rational(3, 2), b: sympy.Rational(-1, 3)}
    want = [[sympy.diff(e, v).subs(point) for v in (a, b)] for e in exprs]

    def f(x):
        with precision():
            return [mpmath.exp(x[0]) * mpmath.tanh(x[1]), x[0] / mpmath.sqrt(x[0] ** 2 + x[1] ** 2 + mpmath.mpf(10) ** -6)]

    J = jacobian_at_dps(f, [point[a], point[b]])
    with mpmath.workdps(80):
        worst = max(abs(J[k][i] - mp(want[k][i])) for k in range(2) for i in range(2))
    assert worst < mpmath.mpf("1e-35")
    J_fine = jacobian(f, [point[a], point[b]])  # 120 digits asked for, the oracle's 60 kept: worse, not better
    with mpmath.workdps(80):
        assert max(abs(J_fine[k][i] - mp(want[k][i])) for k in range(2) for i in range(2)) > worst


def test_sinkhorn_jacobian_equals_sympy_at_one_step():
    """t_max = 1 is a closed form (one column, one row normalisation): its exact derivative by sympy."""
    L = [[sympy.Rational(1, 2), -1], [sympy.Rational(3, 4), 2]]
    syms = sympy.symbols("l0:4")
    M = [[sympy.exp(syms[2 * i + j]) for j in range(2)] for i in range(2)]
    cols = [M[0][j] + M[1][j] for j in range(2)]
    M = [[M[i][j] / cols[j] for j in range(2)] for i in range(2)]
    M = [[M[i][j] / (M[i][0] + M[i][1]) for j in range(2)] for i in range(2)]
    subs = dict(zip(syms, flatten(L)))
    J = jacobian(lambda flat: flatten(sk.sinkhorn_mpf(unflatten(flat, (2, 2)), 1)), flatten(L))
    with mpmath.workdps(80):
        worst = max(abs(J[2 * i + j][k] - mp(sympy.diff(M[i][j], syms[k]).subs(subs)))
                    for i in range(2) for j in range(2) for k in range(4))
    assert worst < mpmath.mpf("1e-60")


def test_sinkhorn_jacobian_does_not_depend_on_the_step_and_its_rows_sum_to_zero():
    L = mm.sinkhorn_jacobian_logits()

    def f(flat):
        return flatten(sk.sinkhorn_mpf(unflatten(flat, (3, 3)), 20))

    J1, J2 = jacobian(f, flatten(L)), jacobian(f, flatten(L), step="1e-36")
    with mpmath.workdps(120):
        assert max(abs(u - v) for r1, r2 in zip(J1, J2) for u, v in zip(r1, r2)) < mpmath.mpf("1e-55")
        # rows of M(20) sum to 1 exactly (the last pass is a row normalisation): sum_j dM_ij / dL = 0
        assert max(abs(mpmath.fsum(J1[3 * i + j][k] for j in range(3))) for i in range(3) for k in range(9)) \
            < mpmath.mpf("1e-60")


def test_sinkhorn_mpf_is_the_oracles_sinkhorn():
    L = mm.sinkhorn_jacobian_logits()
    with precision():
        assert sk.sinkhorn_mpf([[mp(v) for v in r] for r in L], 20) == sk.sinkhorn(L, 20)


def test_residual_oracle_agrees_with_eq7_coefficients_and_eq3():
    c = cases.MHC_DYNAMIC
    co = mhc.eq7_coefficients(c["x"], c["phi_pre"], c["phi_post"], c["phi_res"], c["alpha_pre"], c["alpha_post"],
                              c["alpha_res"], c["b_pre"], c["b_post"], c["b_res"], c["eps"])
    names = ("phi_pre", "phi_post", "phi_res", "alpha_pre", "alpha_post", "alpha_res", "b_pre", "b_post", "b_res")
    n, C = len(c["x"]), len(c["x"][0])
    W_sliced = [[sympy.Rational(i - j, 4) for j in range(n * C)] for i in range(n * C)]
    with precision():
        m = lambda v: [m(u) for u in v] if isinstance(v, list) else mp(exact(v))  # noqa: E731
        params = {k: m(c[k]) for k in names}
        res = mhc.residual_mpf(m(c["x"]), params, m(W_sliced), mp(exact(c["eps"])), 20, "sliced")
        for got, want in ((res["H_pre"], co["H_pre"]), (res["H_post"], co["H_post"]), (res["H_res"], co["H_res"])):
            assert max(abs(mp(u) - mp(v)) for u, v in zip(flatten(got), flatten(want))) < mpmath.mpf("1e-50")
        flat = flatten(m(c["x"]))
        y = [[mpmath.fsum(W_sliced[j * C + a][b] * flat[b] for b in range(n * C)) for a in range(C)] for j in range(n)]
        out = mhc.eq3_sliced(m(c["x"]), y, co["H_res"], [mp(v) for v in co["H_post"]])
        assert max(abs(u - v) for u, v in zip(flatten(res["out"]), flatten(out))) < mpmath.mpf("1e-50")


def test_residual_jacobian_in_x_is_the_closed_form_when_the_coefficients_are_static():
    """alpha = 0: H does not depend on x, so d out / d x = H_res (x) I_C + diag(H_post) W (sliced), exactly."""
    case = mm.point_case()
    params = dict(case["params"]) | {"alpha_pre": 0, "alpha_post": 0, "alpha_res": 0}
    n, C = case["n"], case["C"]
    W = case["W"]["sliced"]

    def f(flat):
        pp = {k: mm._mpf(v) for k, v in params.items()}
        return flatten(mhc.residual_mpf(unflatten(flat, (n, C)), pp, mm._mpf(W), mp(0), 20, "sliced")["out"])

    J = jacobian(f, flatten(case["x"]))
    with mpmath.workdps(120):
        hr = sk.sinkhorn_mpf(mm._mpf(params["b_res"]), 20)
        hp = [2 / (1 + mpmath.exp(-mp(b))) for b in params["b_post"]]
        worst = mpmath.mpf(0)
        for j in range(n):
            for a in range(C):
                for i in range(n):
                    for b in range(C):
                        want = hr[j][i] * (1 if a == b else 0) + hp[j] * mp(W[j * C + a][i * C + b])
                        worst = max(worst, abs(J[j * C + a][i * C + b] - want))
        assert worst < mpmath.mpf("1e-60")
