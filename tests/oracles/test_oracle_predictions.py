"""Predicted red readings: recomputed by hand-written arithmetic, and separated from the correct values."""
import mpmath
import pytest

from fidelity.oracles import cases
from fidelity.oracles import predictions as pr
from fidelity.oracles import quantities as qt
from fidelity.oracles._precision import mp, precision


def _sig(x):
    return 1 / (1 + mpmath.exp(-x))


def test_eq3_predictions_by_hand():
    with mpmath.workdps(70):
        res = 1 * mpmath.mpf("0.8") + 3 * mpmath.mpf("0.2")
        assert abs(pr.predict("mhc.eq3.sigma_post")[0][0] - (res + 10 * _sig(mpmath.mpf(-0.5)))) < 1e-50
        assert abs(pr.predict("mhc.eq3.no_sinkhorn")[0][0] - (-3 * mpmath.log(4) + 20 * _sig(-0.5))) < 1e-50
        assert abs(pr.predict("mhc.eq3.exp_unnormalised")[0][0] - (1 + 0.75 + 20 * _sig(-0.5))) < 1e-50
        assert abs(pr.predict("mhc.eq3.offbyone_post")[0][0] - (res + 20 * _sig(1.5))) < 1e-50


def test_transposed_post_is_a_no_op():
    with precision():
        assert pr.predict("mhc.eq3.transposed_post") == [[qt.value(f"mhc.eq3.out{j}{k}") for k in range(2)]
                                                          for j in range(2)]


def test_transposed_res_is_visible_only_at_n3():
    from fidelity.oracles import mhc

    with precision():
        n3 = mhc.eq3_sliced_mp(cases.MHC_NONSYM_N3["x"], cases.MHC_NONSYM_N3["y"], cases.MHC_NONSYM_N3["b_post"],
                               cases.MHC_NONSYM_N3["b_res"])["out"]
        n2 = mhc.eq3_sliced_mp(cases.MHC_NONSYM_N2["x"], cases.MHC_NONSYM_N2["y"], cases.MHC_NONSYM_N2["b_post"],
                               cases.MHC_NONSYM_N2["b_res"])["out"]
        assert abs(pr.predict("mhc.eq3_nonsym_n3.transposed_res")[0][0] - n3[0][0]) > 1
        assert abs(pr.predict("mhc.eq3_nonsym_n2.transposed_res")[0][0] - n2[0][0]) < mpmath.mpf("1e-11")


def test_attnres_temperature_and_l2_predictions():
    with mpmath.workdps(70):
        s = 2 / mpmath.sqrt(mpmath.mpf(1) / 4 + mpmath.mpf("1e-5")) / 2
        assert abs(pr.predict("attnres.fixture.temperature")["alpha"][0] - _sig(s)) < 1e-50
        s2 = 2 / mpmath.sqrt(1 + mpmath.mpf("1e-5"))
        assert abs(pr.predict("attnres.fixture.l2_norm")["alpha"][0] - _sig(s2)) < 1e-50


def test_rmsnorm_eps_outside_by_hand():
    with mpmath.workdps(70):
        x = [mpmath.mpf(v) / 1000 for v in (1, -2, 3, -4)]
        g = [1, 0.5, 2, -1]
        den = mpmath.sqrt(mpmath.fsum(v * v for v in x) / 4) + mpmath.mpf("1e-5")
        for got, v, gi in zip(pr.predict("rmsnorm.eps_outside"), x, g):
            assert abs(got - v / den * gi) < 1e-50


def test_floored_linear_sinkhorn_readings():
    with precision():
        third = mpmath.mpf(1) / 3
        for name in ("sinkhorn.extreme.floor_linear.plus200", "sinkhorn.extreme.floor_linear.minus200"):
            assert all(abs(x - third) < mpmath.mpf("1e-50") for r in pr.predict(name) for x in r)
        assert all(mpmath.isnan(x) for r in pr.predict("sinkhorn.extreme.floor_linear_f32range.plus200") for x in r)
        assert all(x == 0 for r in pr.predict("sinkhorn.extreme.floor_linear_f32range.minus200") for x in r)
        M = pr.predict("sinkhorn.extreme.floor_linear.row_minus400")
        assert mpmath.fsum(M[2]) < mpmath.mpf(cases.FLOOR)
        assert all(abs(mpmath.fsum(M[i]) - 1) < mpmath.mpf("1e-50") for i in (0, 1))


def test_floor_delays_but_does_not_break_minus200_in_exact_arithmetic():
    """The floor binds for the first steps at -200; by t = 20 the rank-one matrix is J/3 anyway."""
    from fidelity.oracles import sinkhorn as sk

    logits = sk.rank_one_logits(cases.SK_EXTREME["a"], cases.SK_EXTREME["b"], -200)
    early = pr.floored_linear_sinkhorn(logits, t_max=1)
    with precision():
        assert mpmath.fsum(early[0]) < mpmath.mpf("1e-7")


def test_row_first_order_ends_with_exact_columns():
    from fidelity.oracles import sinkhorn as sk

    M = pr.predict("sinkhorn.slow_2x2.row_first")
    d = sk.row_col_defects(M)
    assert d["col"] < mpmath.mpf("1e-55") and d["row"] > mpmath.mpf("1e-3")


@pytest.mark.parametrize("n", [2, 4])
def test_composite_not_unrolled_is_constant(n):
    vals = pr.predict(f"mhc.composite.n{n}.not_unrolled")
    with precision():
        assert all(v == vals[0] for v in vals)
        assert abs(vals[0] - abs(qt.value(f"mhc.composite.n{n}.lambda2"))) < mpmath.mpf("1e-50")


def test_every_prediction_names_a_registered_fixture_and_evaluates():
    from fidelity.fixtures import store as fs

    owned = fs.project_fixtures()
    for name, p in pr.PREDICTIONS.items():
        assert p.fixture in owned, name
        assert p.fn() is not None
    with pytest.raises(KeyError):
        pr.predict("no.such.prediction")
