"""mHC: Eq. 3 in exact sympy against the mpmath oracle, Eq. 7 against the kernel form Eq. 14-16, the parameter count."""
import mpmath
import pytest
import sympy

from fidelity.oracles import cases
from fidelity.oracles import mhc
from fidelity.oracles import sinkhorn as sk
from fidelity.oracles._precision import exact, mp, precision


def _sig(x):
    return 1 / (1 + sympy.exp(-x))


def test_sliced_fixture_equals_exact_sympy_arithmetic():
    c = cases.MHC_EQ3
    H = sympy.Matrix([[sympy.Rational(4, 5), sympy.Rational(1, 5)], [sympy.Rational(1, 5), sympy.Rational(4, 5)]])
    hp = [2 * _sig(sympy.Rational(-1, 2)), 2 * _sig(sympy.Rational(3, 2))]
    x, y = sympy.Matrix(c["x"]), sympy.Matrix(c["y"])
    expected = H * x + sympy.diag(*hp) * y
    got = mhc.eq3_sliced_mp(c["x"], c["y"], c["b_post"], c["b_res"])
    with precision():
        for j in range(2):
            for k in range(2):
                assert abs(got["out"][j][k] - mp(expected[j, k])) < mpmath.mpf("1e-50")


def test_paper_layout_quantity_equals_exact_sympy_arithmetic():
    """The quantity the withdrawn 18.951490 claim is checked against: H_res x + H_post F with one F
    broadcast to both streams, by hand in sympy (H_res = [[4/5, 1/5], [1/5, 4/5]] exactly at 2x2)."""
    from fidelity.oracles.quantities import QUANTITIES

    c = cases.MHC_EQ3
    H = sympy.Matrix([[sympy.Rational(4, 5), sympy.Rational(1, 5)], [sympy.Rational(1, 5), sympy.Rational(4, 5)]])
    hp = sympy.Matrix([2 * _sig(sympy.Rational(-1, 2)), 2 * _sig(sympy.Rational(3, 2))])
    expected = H * sympy.Matrix(c["x"]) + hp * sympy.Matrix([c["F"]])
    assert expected[1, 0] == sympy.Rational(13, 5) + 20 * _sig(sympy.Rational(3, 2))  # 0.2*1 + 0.8*3 + H_post[1]*10
    with precision():
        for j in range(2):
            for k in range(2):
                got = QUANTITIES[f"mhc.eq3.paper_layout.out{j}{k}"].fn()
                assert abs(got - mp(expected[j, k])) < mpmath.mpf("1e-50")


def test_paper_layout_exact():
    c = cases.MHC_EQ3
    hpre = mhc.h_pre(c["b_pre"])
    assert [sympy.nsimplify(v) for v in hpre] == [sympy.Rational(1, 2), sympy.Rational(3, 4)]
    res = mhc.eq3_paper(sympy.Matrix(c["x"]).tolist(), c["F"], hpre, sk.limit_2x2(c["b_res"]).tolist(),
                        mhc.h_post(c["b_post"]))
    assert [sympy.nsimplify(v) for v in res["u"]] == [sympy.Rational(11, 4), 4]
    expected0 = [sympy.Rational(7, 5) + 10 * 2 * _sig(sympy.Rational(-1, 2)),
                 sympy.Rational(12, 5) + 20 * 2 * _sig(sympy.Rational(-1, 2))]
    assert all(sympy.simplify(a - b) == 0 for a, b in zip(res["out"][0], expected0))


def test_nonsymmetric_n3_h_res_is_A_and_not_its_transpose():
    c = cases.MHC_NONSYM_N3
    A = [[exact(x) for x in r] for r in cases.SK_N3["A"]]
    H = mhc.h_res(c["b_res"])
    assert sk.max_abs_diff(H, A) < mpmath.mpf("1e-55")
    At = [list(r) for r in zip(*A)]
    assert sk.max_abs_diff(H, At) > mpmath.mpf("0.1")


def test_nonsymmetric_n2_cannot_show_a_transpose():
    """Every 2x2 doubly stochastic matrix is symmetric: only M(20)'s unconverged residue is asymmetric."""
    H = mhc.h_res(cases.MHC_NONSYM_N2["b_res"])
    with precision():
        assert abs(H[0][1] - H[1][0]) < mpmath.mpf("1e-12")
    a, b, c, d = sympy.symbols("a b c d")
    sol = sympy.solve([a + b - 1, c + d - 1, a + c - 1, b + d - 1], [b, c, d], dict=True)
    assert len(sol) == 1 and sympy.simplify(sol[0][b] - sol[0][c]) == 0  # row and column sums 1 force b = c


def test_eq7_matches_the_kernel_form_of_eq14_to_16():
    c = cases.MHC_DYNAMIC
    co = mhc.eq7_coefficients(c["x"], c["phi_pre"], c["phi_post"], c["phi_res"], c["alpha_pre"], c["alpha_post"],
                              c["alpha_res"], c["b_pre"], c["b_post"], c["b_res"], c["eps"])
    with mpmath.workdps(70):
        flat = [mp(v) for row in c["x"] for v in row]
        n, D = 2, 4
        r = mpmath.sqrt(mpmath.fsum(v * v for v in flat)) / mpmath.sqrt(D)  # Eq. 15, no eps
        phi = [[mp(v) for v in a + b + cc] for a, b, cc in zip(c["phi_pre"], c["phi_post"], c["phi_res"])]
        tt = [mpmath.fsum(flat[i] * phi[i][k] for i in range(D)) for k in range(n * n + 2 * n)]  # Eq. 14
        al = [mp(c["alpha_pre"])] * n + [mp(c["alpha_post"])] * n + [mp(c["alpha_res"])] * (n * n)
        b = [mp(v) for v in c["b_pre"]] + [mp(v) for v in c["b_post"]] + [mp(v) for row in c["b_res"] for v in row]
        ht = [al[k] * tt[k] / r + b[k] for k in range(len(tt))]  # Eq. 16
        ours = [mp(v) for v in co["H_pre_tilde"] + co["H_post_tilde"]] + [mp(v) for row in co["H_res_tilde"] for v in row]
        for a, bb in zip(ours, ht):
            assert abs(a - bb) < mpmath.mpf("1e-19") * max(1, abs(bb))  # eps = 1e-20 is the only difference
        # Eq. 17-19
        for k in range(n):
            assert abs(mp(co["H_pre"][k]) - 1 / (1 + mpmath.exp(-ht[k]))) < mpmath.mpf("1e-19")
            assert abs(mp(co["H_post"][k]) - 2 / (1 + mpmath.exp(-ht[n + k]))) < mpmath.mpf("1e-19")


@pytest.mark.parametrize("D,n", [(768, 2), (768, 4), (1, 1), (64, 3), (4096, 8)])
def test_parameter_count_shape_table_equals_formula(D, n):
    assert mhc.param_count(D, n) == mhc.param_formula(D, n)


def test_parameter_counts_at_768():
    assert mhc.param_count(768, 2) == 6155
    assert mhc.param_count(768, 4) == 18459
    assert mhc.param_count(768, 2, ["phi_pre", "alpha_pre", "b_pre"]) == 768 * 2 + 1 + 2
