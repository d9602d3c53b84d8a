"""Hyper-Connections: the Eq. 3-5 layer against Alg. 2's mixing-matrix form; the sympy equivalence proofs; DHC in mpmath."""
import mpmath
import sympy

from fidelity.oracles import cases
from fidelity.oracles import hc
from fidelity.oracles._precision import exact, mp


def _alg2_layer(H, B, A_m, A_r, T):
    """Alg. 2: alpha = [A_m | A_r] (n x (n+1)); mix = alpha^T H; out = beta^T T(mix[0]) + mix[1:]."""
    H = sympy.Matrix(H)
    alpha = sympy.Matrix.hstack(sympy.Matrix(A_m), sympy.Matrix(A_r))
    mix = alpha.T * H
    return sympy.Matrix(B).T * sympy.Matrix(T(mix[0, :])) + mix[1:, :]


def test_layer_matches_alg2_form_for_random_ish_matrices():
    H = sympy.Matrix([[1, 2, -1], [0, 3, 1], [2, -2, 5]])
    B = sympy.Matrix([[1, sympy.Rational(1, 2), -1]])
    A_m = sympy.Matrix([[sympy.Rational(1, 3)], [1], [-2]])
    A_r = sympy.Matrix([[1, 2, 0], [0, 1, -1], [3, 0, 1]])
    T = hc.linear_T([[1, 0, 2], [0, -1, 1], [1, 1, 0]])
    assert hc.hc_layer(H, B, A_m, A_r, T)["out"] == _alg2_layer(H, B, A_m, A_r, T)


def test_replicated_equivalence_is_proved():
    proofs = hc.replicated_equivalence()
    assert all(p["holds"] for p in proofs.values()), proofs


def test_dhc_with_zero_weights_is_static_is_proved():
    assert hc.dhc_zero_weights_is_static()["holds"]


def test_static_fixture_readout_is_n_times_prenorm():
    c = cases.HC_STATIC
    Ts = [hc.linear_T([[exact(v) for v in r] for r in W]) for W in c["W"]]
    res = hc.run_static(c["h"], c["n"], Ts)
    r = sympy.Matrix([[exact(v) for v in c["h"]]])
    for W in c["W"]:
        r = r + r * sympy.Matrix([[exact(v) for v in row] for row in W])
    assert res["readout"] == c["n"] * r


def test_layer_index_selects_row_k_mod_n():
    c = cases.HC_STATIC
    Ts = [hc.linear_T([[exact(v) for v in r] for r in W]) for W in c["W"]]
    Hs = hc.run_layers(c["H0_distinct"], Ts)
    H = sympy.Matrix(c["H0_distinct"])
    for k, W in enumerate(c["W"]):
        row = H.row(k % c["n"])
        H = H + sympy.ones(c["n"], 1) * (row * sympy.Matrix([[exact(v) for v in r] for r in W]))
        assert Hs[k + 1] == H


def test_dhc_dynamic_matches_an_mpmath_recomputation():
    c = cases.HC_DHC
    n, d = c["n"], 3
    mat = lambda M: sympy.Matrix([[exact(v) for v in r] for r in M])  # noqa: E731
    init = hc.eq14_init(n, c["k"])
    res = hc.dhc_layer(mat(c["H"]), init["B"], init["A_m"], init["A_r"], mat(c["W_beta"]), mat(c["W_m"]),
                       mat(c["W_r"]), c["s_alpha"], c["s_beta"], c["eps"], hc.linear_T(mat(c["W_T"])))
    with mpmath.workdps(70):
        H = mpmath.matrix([[mp(v) for v in r] for r in c["H"]])
        Hbar = mpmath.matrix(n, d)
        for i in range(n):
            mu = mpmath.fsum(H[i, j] for j in range(d)) / d
            var = mpmath.fsum((H[i, j] - mu) ** 2 for j in range(d)) / d
            for j in range(d):
                Hbar[i, j] = (H[i, j] - mu) / mpmath.sqrt(var + mp(c["eps"]))
        th = lambda M: M.apply(mpmath.tanh)  # noqa: E731
        mm = lambda M: mpmath.matrix([[mp(v) for v in r] for r in M])  # noqa: E731
        B = mp(c["s_beta"]) * th(Hbar * mm(c["W_beta"])).T + mpmath.ones(1, n)
        Am = mp(c["s_alpha"]) * th(Hbar * mm(c["W_m"]))
        Am[c["k"] % n, 0] += 1
        Ar = mp(c["s_alpha"]) * th(Hbar * mm(c["W_r"])) + mpmath.eye(n)
        h0 = Am.T * H
        out = B.T * (h0 * mm(c["W_T"])) + Ar.T * H
        for i in range(n):
            for j in range(d):
                assert abs(out[i, j] - mp(res["out"][i, j])) < mpmath.mpf("1e-45")
