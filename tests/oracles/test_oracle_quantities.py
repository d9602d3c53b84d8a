"""The quantity registry (names, finiteness, independent recomputation) and the confirmation rule."""
from fractions import Fraction

import mpmath
import pytest
import sympy

from fidelity.oracles import quantities as qt
from fidelity.oracles.quantities import compare_claim, parse_stated

EXPECTED_NAMES = (
    [f"attnres.fixture.{c}.{k}" for c in ("paper", "l2_sqrt_d", "l2") for k in ("score0", "alpha0", "out0")]
    + ["attnres.fixture.gap.paper_l2", "attnres.fixture.gap.l2_l2_sqrt_d", "rmsnorm.example.rms_10_20_30_40"]
    + [f"mhc.eq3.{k}" for k in ("h_post0", "h_post1", "h_res00", "out00", "out01", "out10", "out11")]
    + [f"mhc.eq3.paper_layout.out{j}{k}" for j in range(2) for k in range(2)]
    + [f"mhc.eq3.{k}.out00" for k in ("sigma_post", "no_sinkhorn", "offbyone_post", "transposed_post")]
    + [f"mhc.eq3.{k}.rel" for k in ("sigma_post", "no_sinkhorn", "offbyone_post")]
    + ["mhc.init.hres_identity_distance.n2", "mhc.init.hres_identity_distance.n4",
       "mhc.perturbed.hres_identity_distance.n2", "mhc.composite.n2.lambda2", "mhc.composite.n4.lambda2"]
    + [f"mhc.composite.n2.distance.T{t}" for t in range(1, 9)]
    + [f"mhc.composite.n2.offdiag.T{t}" for t in range(1, 9)]
    + ["mhc.composite.n4.offdiag_gap.T4", "mhc.params.n2_d768", "mhc.params.n4_d768",
       "mhc.params.unwired_pre.n2_d768", "mhc.params.phi_pre.n2_d768", "mhc.params.fraction.n2",
       "mhc.params.fraction.n4", "mhc.stiffness.one_unit_offdiag.n2", "mhc.stiffness.one_unit_offdiag.n4",
       "mhc.sinkhorn.launches_per_call", "mhc.ablation.hres_share", "mhc.ablation.hpre_share",
       "mhc.ablation.hpost_share"]
    + [f"hc.table1.{k}" for k in ("gain_n2", "gain_n4_over_n2", "gain_n8_over_n4", "total_gain_n8", "total_gain_n4")]
)


def test_registry_holds_exactly_the_agreed_names():
    assert sorted(qt.QUANTITIES) == sorted(EXPECTED_NAMES)


def test_every_quantity_is_a_finite_mpf_with_a_description():
    for name, q in qt.QUANTITIES.items():
        v = q.fn()
        assert isinstance(v, mpmath.mpf) and mpmath.isfinite(v), name
        assert q.description, name


def test_independent_recomputations():
    with mpmath.workdps(60):
        e = mpmath.e
        assert abs(qt.value("mhc.composite.n2.lambda2") + mpmath.tanh(1)) < 1e-50
        assert abs(qt.value("mhc.init.hres_identity_distance.n4") - 3 / (e**10 + 3)) < 1e-55
        assert abs(qt.value("mhc.perturbed.hres_identity_distance.n2") - e**2 / (1 + e**2)) < 1e-50
        assert abs(qt.value("rmsnorm.example.rms_10_20_30_40") - 5 * mpmath.sqrt(30)) < 1e-50
        assert abs(qt.value("attnres.fixture.paper.score0") - 4 / mpmath.sqrt(1 + mpmath.mpf("4e-5"))) < 1e-50
        lam4 = (1 - e**2) / (1 + 3 * e**2)
        assert abs(qt.value("mhc.composite.n4.offdiag_gap.T4") - 3 * lam4**4) < 1e-50
        assert abs(qt.value("mhc.composite.n2.offdiag.T3") - (1 + mpmath.tanh(1) ** 3)) < 1e-50
    assert qt.value("mhc.params.n2_d768") == 6155 and qt.value("mhc.params.n4_d768") == 18459
    assert qt.value("mhc.sinkhorn.launches_per_call") == 280


@pytest.mark.parametrize("stated,computed,verdict", [
    ("4.000002", Fraction(40000024, 10**7), "CONFIRMED"),   # |diff| = 4e-7 <= 5e-7
    ("4.000002", Fraction(40000026, 10**7), "REFUTED"),     # 6e-7 > 5e-7
    ("0.5", Fraction(55, 100), "CONFIRMED"),                # exactly half a unit: allowed
    ("0.5", Fraction(5501, 10000), "REFUTED"),
    ("4.540e-5", Fraction(45396, 10**9), "CONFIRMED"),      # unit 1e-8, allowed 5e-9, diff 4e-9
    ("4.540e-5", Fraction(45394, 10**9), "REFUTED"),
    ("6155", 6155, "CONFIRMED"),
    ("6 155", 6155, "CONFIRMED"),
    ("6155", Fraction(61551, 10), "REFUTED"),               # integers exactly
    ("81 %", Fraction(8148, 100), "CONFIRMED"),             # a percentage is a rounded decimal
    ("-0.7616", sympy.Rational(-76155, 100000), "CONFIRMED"),
    ("1e-5", Fraction(14, 10**6), "CONFIRMED"),             # mantissa "1", unit 1e-5
    ("-0.7616", mpmath.mpf("-0.76156"), "CONFIRMED"),       # a negative mpf keeps its sign
    ("0.7616", mpmath.mpf("-0.76156"), "REFUTED"),
])
def test_compare_claim_hand_cases(stated, computed, verdict):
    r = compare_claim(stated, computed)
    assert r["verdict"] == verdict, r
    assert set(r) == {"verdict", "stated", "computed", "difference", "allowed"}


def test_parse_and_bad_strings():
    assert parse_stated("4.540e-5") == (Fraction(454, 10**7), Fraction(5, 10**9))
    assert parse_stated("17.751490") == (Fraction(1775149, 10**5), Fraction(5, 10**7))
    with pytest.raises(ValueError):
        parse_stated("about four")
    with pytest.raises(ValueError):
        compare_claim("1.0", mpmath.nan)


def test_computed_string_has_30_significant_digits():
    r = compare_claim("8.95081338", qt.value("mhc.eq3.out00"))
    assert r["computed"].replace(".", "").lstrip("0").__len__() >= 30


SOURCE_CLAIMS = [
    # source 000 section 3: eps inside the root makes the paper score 3.99992, not 4.000002
    ("attnres.fixture.paper.score0", "4.000002", "REFUTED"),
    ("attnres.fixture.paper.alpha0", "0.9820138", "REFUTED"),
    ("attnres.fixture.l2_sqrt_d.score0", "0.999995", "CONFIRMED"),
    ("attnres.fixture.l2_sqrt_d.alpha0", "0.7310586", "REFUTED"),
    ("attnres.fixture.l2.score0", "1.999990", "CONFIRMED"),
    ("attnres.fixture.l2.alpha0", "0.8807971", "REFUTED"),
    ("attnres.fixture.gap.paper_l2", "0.10", "CONFIRMED"),
    ("attnres.fixture.gap.l2_l2_sqrt_d", "0.15", "CONFIRMED"),
    # source 004 section 5.1
    ("mhc.eq3.h_post0", "0.75508134", "CONFIRMED"),
    ("mhc.eq3.h_post1", "1.63514895", "CONFIRMED"),
    ("mhc.eq3.out00", "8.95081338", "CONFIRMED"),
    ("mhc.eq3.out01", "17.50162675", "CONFIRMED"),
    ("mhc.eq3.out10", "51.65446857", "CONFIRMED"),
    ("mhc.eq3.out11", "69.00595810", "CONFIRMED"),
    ("mhc.eq3.sigma_post.out00", "5.175407", "CONFIRMED"),
    ("mhc.eq3.no_sinkhorn.out00", "3.391930", "CONFIRMED"),
    ("mhc.eq3.offbyone_post.out00", "17.751490", "CONFIRMED"),
    ("mhc.eq3.sigma_post.rel", "42.2%", "CONFIRMED"),
    ("mhc.eq3.no_sinkhorn.rel", "62.1%", "CONFIRMED"),
    ("mhc.eq3.offbyone_post.rel", "98.3%", "CONFIRMED"),
    # source 004 sections 5.1b, 5.3b, 3.2, 3.3, 1.3
    ("mhc.init.hres_identity_distance.n2", "4.540e-5", "CONFIRMED"),
    ("mhc.perturbed.hres_identity_distance.n2", "0.8808", "CONFIRMED"),
    ("mhc.composite.n2.lambda2", "-0.7616", "CONFIRMED"),
    ("mhc.composite.n4.lambda2", "-0.2758", "CONFIRMED"),
    ("mhc.composite.n2.distance.T4", "0.3364", "CONFIRMED"),
    ("mhc.composite.n2.distance.T8", "0.1132", "CONFIRMED"),
    ("mhc.composite.n2.offdiag.T3", "1.4417", "CONFIRMED"),
    ("mhc.composite.n4.offdiag_gap.T4", "0.0174", "CONFIRMED"),
    ("mhc.params.n2_d768", "6155", "CONFIRMED"),
    ("mhc.params.n4_d768", "18459", "CONFIRMED"),
    ("mhc.params.unwired_pre.n2_d768", "1543", "REFUTED"),   # 768 * 2 + 1 + 2 = 1539
    ("mhc.params.phi_pre.n2_d768", "1540", "REFUTED"),       # 768 * 2 = 1536
    ("mhc.params.fraction.n2", "0.067", "CONFIRMED"),
    ("mhc.params.fraction.n4", "0.201", "CONFIRMED"),
    ("mhc.stiffness.one_unit_offdiag.n4", "2.1e-4", "REFUTED"),
    ("mhc.sinkhorn.launches_per_call", "280", "CONFIRMED"),
    ("mhc.ablation.hres_share", "81 %", "CONFIRMED"),
    ("mhc.ablation.hpre_share", "11 %", "CONFIRMED"),
    ("mhc.ablation.hpost_share", "7 %", "CONFIRMED"),
    ("hc.table1.gain_n2", "0.009", "CONFIRMED"),
    ("hc.table1.gain_n4_over_n2", "0.021", "CONFIRMED"),
    ("hc.table1.gain_n8_over_n4", "0.003", "CONFIRMED"),
    ("hc.table1.total_gain_n4", "0.030", "CONFIRMED"),
]


@pytest.mark.parametrize("name,stated,verdict", SOURCE_CLAIMS)
def test_source_claims(name, stated, verdict):
    assert compare_claim(stated, qt.value(name))["verdict"] == verdict
