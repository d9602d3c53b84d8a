"""Sinkhorn: the linear iteration against a log-domain one, closed forms against the iteration, sympy invariance proofs."""
import mpmath
import pytest
import sympy

from fidelity.oracles import cases
from fidelity.oracles import sinkhorn as sk
from fidelity.oracles._precision import exact, mp, precision


def _log_domain(logits, t_max=20):
    """Eq. 9 in the log domain: subtract column then row log-sum-exps."""
    with mpmath.workdps(70):
        A = [[mp(x) for x in row] for row in logits]
        n, k = len(A), len(A[0])

        def lse(xs):
            m = max(xs)
            return m + mpmath.log(mpmath.fsum(mpmath.exp(x - m) for x in xs))

        for _ in range(t_max):
            cl = [lse([A[i][j] for i in range(n)]) for j in range(k)]
            A = [[A[i][j] - cl[j] for j in range(k)] for i in range(n)]
            rl = [lse(row) for row in A]
            A = [[x - r for x in row] for row, r in zip(A, rl)]
        return [[mpmath.exp(x) for x in row] for row in A]


ALL_LOGITS = {
    "2x2": cases.SK_2X2["logits"],
    "slow": cases.SK_SLOW["logits"],
    "n3": sk.scaled_logits(**cases.SK_N3),
    "n4": sk.scaled_logits(**cases.SK_N4),
    "plus200": sk.rank_one_logits(cases.SK_EXTREME["a"], cases.SK_EXTREME["b"], 200),
    "minus200": sk.rank_one_logits(cases.SK_EXTREME["a"], cases.SK_EXTREME["b"], -200),
    "bump": [[10, 1], [0, 10]],
}


@pytest.mark.parametrize("name", sorted(ALL_LOGITS))
def test_linear_iteration_matches_log_domain(name):
    ours = sk.sinkhorn(ALL_LOGITS[name])
    other = _log_domain(ALL_LOGITS[name])
    assert sk.max_abs_diff(ours, other) < mpmath.mpf("1e-45")


def test_cross_ratio_is_invariant_under_both_normalisations_symbolically():
    a, b, c, d = sympy.symbols("a b c d", positive=True)
    M = sympy.Matrix([[a, b], [c, d]])
    cols = M * sympy.diag(1 / (a + c), 1 / (b + d))
    rows = sympy.diag(1 / (cols[0, 0] + cols[0, 1]), 1 / (cols[1, 0] + cols[1, 1])) * cols
    for X in (cols, rows):
        assert sympy.simplify(X[0, 0] * X[1, 1] / (X[0, 1] * X[1, 0]) - a * d / (b * c)) == 0


def test_2x2_limit_has_the_stated_cross_ratio_and_is_doubly_stochastic():
    lim = sk.limit_2x2(cases.SK_2X2["logits"])
    p = lim[0, 0]
    assert sympy.simplify((p / (1 - p)) ** 2 - sympy.exp(sympy.Rational(7, 2))) == 0
    traj = sk.sinkhorn(cases.SK_2X2["logits"], trajectory=True)
    rho = sk.cross_ratio(sk.exp_matrix(cases.SK_2X2["logits"]))
    with precision():
        for M in traj:
            assert abs(M[0][0] * M[1][1] / (M[0][1] * M[1][0]) - mp(rho)) < mpmath.mpf("1e-45") * mp(rho)
    assert sk.max_abs_diff(traj[-1], lim.tolist()) < mpmath.mpf("1e-6")  # M(20) is close, not converged
    assert sk.max_abs_diff(sk.sinkhorn(cases.SK_2X2["logits"], t_max=400), lim.tolist()) < mpmath.mpf("1e-45")


def test_eq3_cross_ratio_16_gives_four_fifths():
    lim = sk.limit_2x2(cases.MHC_EQ3["b_res"])
    assert lim == sympy.Matrix([[sympy.Rational(4, 5), sympy.Rational(1, 5)], [sympy.Rational(1, 5), sympy.Rational(4, 5)]])
    assert sk.cross_ratio(sk.exp_matrix(cases.MHC_EQ3["b_res"])) == 16


@pytest.mark.parametrize("case", [cases.SK_N3, cases.SK_N4])
def test_scaled_doubly_stochastic_converges_to_A(case):
    logits = sk.scaled_logits(**case)
    A = [[exact(x) for x in r] for r in case["A"]]
    assert sk.max_abs_diff(sk.sinkhorn(logits, t_max=200), A) < mpmath.mpf("1e-45")


def test_slow_case_is_visibly_unconverged_at_20_and_converges_later():
    logits = cases.SK_SLOW["logits"]
    lim = sk.limit_2x2(logits).tolist()
    g20 = sk.max_abs_diff(sk.sinkhorn(logits), lim)
    g2000 = sk.max_abs_diff(sk.sinkhorn(logits, t_max=2000), lim)
    assert g20 > mpmath.mpf("0.01")
    assert g2000 < mpmath.mpf("1e-10")


@pytest.mark.parametrize("offset", [200, -200, 0])
def test_rank_one_logits_give_J_over_n_after_one_step(offset):
    logits = sk.rank_one_logits(cases.SK_EXTREME["a"], cases.SK_EXTREME["b"], offset)
    J = [[sympy.Rational(1, 3)] * 3] * 3
    assert sk.max_abs_diff(sk.sinkhorn(logits, t_max=1), J) < mpmath.mpf("1e-55")
    assert sk.max_abs_diff(sk.sinkhorn(logits), J) < mpmath.mpf("1e-55")


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_init_closed_form_matches_the_iteration(n):
    cd = sk.constant_diagonal(n, 10)
    M = sk.sinkhorn([[10 if i == j else 0 for j in range(n)] for i in range(n)])
    assert sk.max_abs_diff(M, cd["H"].tolist()) < mpmath.mpf("1e-50")
    I = [[1 if i == j else 0 for j in range(n)] for i in range(n)]
    with precision():
        assert abs(sk.max_abs_diff(M, I) - mp(cd["identity_distance"])) < mpmath.mpf("1e-50")
    # the closed form (n-1)/(e^10+n-1), stated independently
    assert sympy.simplify(cd["identity_distance"] - (n - 1) / (sympy.exp(10) + n - 1)) == 0


@pytest.mark.parametrize("n", [2, 4])
def test_composite_closed_form_matches_matrix_powers_and_eigenvalues(n):
    logits = [[0 if i == j else 2 for j in range(n)] for i in range(n)]
    H = sk.sinkhorn(logits)
    lam = sk.constant_diagonal(n, 0, 2)["lambda2"]
    assert sympy.simplify(lam - (1 - sympy.exp(2)) / (1 + (n - 1) * sympy.exp(2))) == 0
    with mpmath.workdps(70):
        Hm = mpmath.matrix(H)
        J = mpmath.ones(n, n) / n
        for T in range(1, 9):
            HT = Hm**T
            comp = sk.composite(n, 0, 2, T)
            E, _ = mpmath.eigsy(HT - J)
            spectral = max(abs(e) for e in E)
            assert abs(spectral - mp(comp["distance"])) < mpmath.mpf("1e-45")
            off = mpmath.fsum(HT[i, j] for i in range(n) for j in range(n) if i != j)
            assert abs(off - mp(comp["offdiag"])) < mpmath.mpf("1e-45")


def test_trajectory_starts_at_exp_and_is_column_then_row():
    logits = cases.SK_2X2["logits"]
    traj = sk.sinkhorn(logits, t_max=1, trajectory=True)
    with precision():
        M0 = [[mpmath.exp(mp(x)) for x in r] for r in logits]
        assert sk.max_abs_diff(traj[0], M0) == 0
        # rows of M(1) sum to 1 exactly-ish, columns do not (the last step is T_r)
        d = sk.row_col_defects(traj[1])
        assert d["row"] < mpmath.mpf("1e-55") and d["col"] > mpmath.mpf("1e-3")
