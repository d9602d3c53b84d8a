"""RMSNorm oracle (sympy) against an mpmath route written as x * (mean + eps)^(-1/2)."""
import mpmath
import sympy

from fidelity.oracles import cases
from fidelity.oracles._precision import exact, mp, precision
from fidelity.oracles.rmsnorm import rms, rmsnorm


def _mp_rmsnorm(x, eps, g):
    with mpmath.workdps(50):
        xs = [mpmath.mpf(sympy.Rational(v).p) / sympy.Rational(v).q for v in map(exact, x)]
        inv = mpmath.power(mpmath.fsum(mpmath.power(v, 2) for v in xs) / len(xs) + mp(eps), -0.5)
        return [v * inv * mp(gi) for v, gi in zip(xs, g)]


def test_matches_mpmath_route():
    c = cases.RMSNORM_EPS
    ours = rmsnorm(c["x"], c["eps"], c["g"])
    other = _mp_rmsnorm(c["x"], c["eps"], c["g"])
    with precision():
        for a, b in zip(ours, other):
            assert abs(mp(a) - b) <= mpmath.mpf("1e-45") * abs(b)


def test_rms_of_10_20_30_40_is_5_sqrt_30():
    assert sympy.simplify(rms([10, 20, 30, 40]) - 5 * sympy.sqrt(30)) == 0


def test_scale_invariant_at_eps_zero_and_unit_mean_square():
    x = [3, -1, 4, "1/2"]
    y = rmsnorm(x)
    y7 = rmsnorm([7 * exact(v) for v in x])
    assert all(sympy.simplify(a - b) == 0 for a, b in zip(y, y7))
    assert sympy.simplify(sum(v**2 for v in y) / 4 - 1) == 0


def test_eps_shrinks_mean_square_by_the_exact_factor():
    c = cases.RMSNORM_EPS
    y = rmsnorm(c["x"], c["eps"])
    ms = sum(exact(v) ** 2 for v in c["x"]) / 4
    assert sympy.simplify(sum(v**2 for v in y) / 4 - ms / (ms + exact(c["eps"]))) == 0
