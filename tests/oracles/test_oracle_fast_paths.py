"""The mpmath fast paths the loop model composes give the exact oracles' values, bit for bit, at DPS digits."""
import random
from fractions import Fraction

import mpmath
import sympy

from fidelity.oracles import depth_attention as da
from fidelity.oracles import hc
from fidelity.oracles import mhc
from fidelity.oracles._precision import mp, precision
from fidelity.oracles.loop_model import _fractions, _from_fractions, to_rational


def _mpf_rows(seed, rows, cols):
    """60-digit mpf with full mantissas (as the loop's states are), not short dyadics."""
    rng = random.Random(seed)
    with precision():
        return [[mpmath.mpf(rng.randint(-10**6, 10**6)) / 7919 / (1 + j) for j in range(cols)] for _ in range(rows)]


def _q(v):
    return [_q(x) for x in v] if isinstance(v, list) else to_rational(v)


def _exact_at_dps(v):
    with precision():
        return [_exact_at_dps(x) for x in v] if isinstance(v, list) else mp(v)


def test_eq7_fast_path_is_the_exact_oracle_rounded():
    n, C = 2, 3
    for seed in range(4):
        x = _mpf_rows(seed, n, C)
        w = _mpf_rows(100 + seed, n * C, n + n + n * n)
        params = {"phi_pre": [r[:n] for r in w], "phi_post": [r[n:2 * n] for r in w], "phi_res": [r[2 * n:] for r in w],
                  "alpha_pre": sympy.Rational(1, 2), "alpha_post": sympy.Rational(3, 4), "alpha_res": 1,
                  "b_pre": [1, "-1/2"], "b_post": ["1/4", 0], "b_res": [[2, -1], [0, 1]]}
        eps = sympy.Rational(1, 10**20)
        exact = mhc.eq7_coefficients(_q(x), _q(params["phi_pre"]), _q(params["phi_post"]), _q(params["phi_res"]),
                                     params["alpha_pre"], params["alpha_post"], params["alpha_res"], params["b_pre"],
                                     params["b_post"], params["b_res"], eps, 20)
        fast = mhc.eq7_coefficients_mp(x, params, eps, 20)
        assert fast["H_pre"] == _exact_at_dps(exact["H_pre"])
        assert fast["H_post"] == _exact_at_dps(exact["H_post"])
        assert fast["H_res"] == exact["H_res"]


def test_depth_attention_fast_path_is_the_exact_oracle_rounded():
    for seed in range(4):
        sources = _mpf_rows(seed, 3, 4)
        query = _mpf_rows(50 + seed, 1, 4)[0]
        for convention in da.CONVENTIONS:
            exact = da.depth_attention(_q(sources), _q(query), sympy.Rational(1, 10**6), convention)["h"]
            assert da.depth_attention_mp(sources, query, sympy.Rational(1, 10**6), convention) == _exact_at_dps(exact)


def test_layer_norm_fast_path_is_the_exact_oracle_rounded():
    for seed in range(4):
        H = _mpf_rows(seed, 2, 5)
        exact = hc.layer_norm_rows(sympy.Matrix(_q(H)), sympy.Rational(1, 10**5)).tolist()
        assert hc.layer_norm_rows_mp(H, sympy.Rational(1, 10**5)) == _exact_at_dps(exact)


def test_hc_layer_on_fractions_is_the_sympy_layer():
    H, B, A_m, A_r = _mpf_rows(1, 2, 3), _mpf_rows(2, 1, 2), _mpf_rows(3, 2, 1), _mpf_rows(4, 2, 2)
    W = _q(_mpf_rows(5, 3, 3))
    exact = hc.hc_layer(sympy.Matrix(_q(H)), sympy.Matrix(_q(B)), sympy.Matrix(_q(A_m)), sympy.Matrix(_q(A_r)),
                        hc.linear_T(sympy.Matrix(W)))["out"].tolist()
    Wf = [[Fraction(int(v.p), int(v.q)) for v in row] for row in W]
    fast = hc.hc_layer_fractions(_fractions(H), _fractions(B), _fractions(A_m), _fractions(A_r),
                                 lambda h: [sum(h[i] * Wf[i][j] for i in range(3)) for j in range(3)])
    assert [[sympy.Rational(v.numerator, v.denominator) for v in row] for row in fast] == exact
    with precision():
        assert _from_fractions(fast) == _exact_at_dps(exact)
