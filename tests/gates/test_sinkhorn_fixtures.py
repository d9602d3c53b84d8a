"""Gates: Sinkhorn-Knopp (mHC Eq. 9) against the oracle's fixtures.

Tolerances (relative, a multiple of the compared dtype's epsilon, beside each gate):
the log-domain iteration does 2 t_max = 40 normalisations, each a logsumexp and a
subtraction. Sinkhorn corrects itself: a rounding error made in one normalisation is
a diagonal scaling, which the next normalisation along that axis removes, so only the
last passes' rounding, on O(1) log-values, reaches M(t_max), whatever the logits'
offset (+-200, -400). 64 eps bounds that with room and stays far below every
predicted defect (test_every_predicted_defect_lies_ten_tolerances_away asserts it).

That holds for an offset, not for a spread within the matrix: where entries lie e^-S below
their row's largest (the stiff 10 I fixtures, S = 10), each pass rounds log-values of size S,
half an ulp of S an entry, and that rounding differs entry by entry, so no later pass removes
it: up to 2 t_max x S/2 eps more on those entries (STIFF_TOL). A faithful iteration in the
form POT and hyper-connections use (dual potentials f, g and M = exp(logits + f + g)) reads
168 eps on SK(10 I + e_01) at n = 2 in float32, and ours 57 eps at n = 4.

A row or column sum of entries each within 64 eps of theirs is within 64 eps of 1, plus the
sum's own n roundings; the forms differ in which of the two the last pass makes exact.

Quantities that are DIFFERENCES of O(1) entries (max|H - I| = 1 - H_ii, the change
max|SK(b) - SK(10 I)|, a column defect |colsum - 1|) carry the rounding of the O(1)
entries they are computed from, so they are compared with floor 1: their error is
relative to the scale 1 of a doubly stochastic matrix, not to their own smallness.
"""

import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_bound, assert_close, assert_predictions_separated, distance_in_tolerances
from fidelity.gates.fixture_values import expected, fixture, param, value
from fidelity.gates import readings
from fidelity.gates.routes import routed
from fidelity.spec.values import spec_value

DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
ROUTES = ["autograd", "manual"]
SINKHORN_TOL = Tolerance(eps_multiple=64, floor=1e-30)   # 40 normalisations, self-correcting: see the module doc
CROSS_RATIO_TOL = Tolerance(eps_multiple=256, floor=1e-30)  # a product/quotient of 4 entries, each within 64 eps
UNIT_SCALE_TOL = Tolerance(eps_multiple=64, floor=1.0)    # a difference of O(1) entries: error relative to 1
TABLE5_T_MAX = spec_value("mhc.table5.tmax")  # the paper's t_max (the spec's value:), the interface's default
STIFF_SPREAD = 10  # the stiff fixtures' entries lie up to e^-10 below their row's largest
STIFF_TOL = Tolerance(eps_multiple=SINKHORN_TOL.eps_multiple + TABLE5_T_MAX * STIFF_SPREAD, floor=1e-30)  # module doc
TRAJECTORY_STEPS = [0, 1, 2, 3]  # M(0) .. M(3) of sinkhorn.cross_ratio_2x2's trajectory, one instance each


def _sinkhorn(subject, backward):
    return routed(subject, "sinkhorn", backward, gradient=False)


def _expected_entry(fx, group, field, dtype, device):
    """expected[group][field] of a fixture whose expected values are grouped per n."""
    raw = fixture(fx)["expected"][group][field]["float64"]
    return torch.tensor(raw, dtype=torch.float64).to(dtype=dtype, device=device)


def _as_float(raw):
    if isinstance(raw, list):
        return [_as_float(v) for v in raw]
    return float(raw)  # "nan" -> nan


@pytest.mark.gate(equations=["mhc.eq9", "mhc.eq6"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_two_by_two_matches_eq9_after_t_max_steps(subject, device, dtype, backward):
    """The 2x2 case whose limit is fixed by the cross ratio: M(20) of Eq. 9, column then row.

    Every normalisation is a diagonal scaling, so the cross ratio M00 M11 / (M01 M10) = e^(7/2)
    of M(0) is M(t_max)'s too (256 eps: four entries, each within 64 eps).
    """
    fx = "sinkhorn.cross_ratio_2x2"
    logits = value(fx, "logits", dtype, device)
    got = _sinkhorn(subject, backward)(logits, t_max=param(fx, "t_max"))
    assert_close(got, expected(fx, "M_t_max", dtype, device), SINKHORN_TOL, what="M(t_max) of the 2x2 case")
    m = got.detach().to(torch.float64)
    rho = m[0, 0] * m[1, 1] / (m[0, 1] * m[1, 0])
    assert_close(rho, expected(fx, "cross_ratio"), CROSS_RATIO_TOL, dtype=dtype,
                 what="cross ratio M00 M11 / (M01 M10) of M(t_max), preserved by every normalisation")


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn")
@pytest.mark.parametrize("t", TRAJECTORY_STEPS, ids=[f"t{t}" for t in TRAJECTORY_STEPS])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_first_steps_follow_eq9_column_then_row(subject, device, dtype, backward, t):
    """M(0) = exp(logits), then M(1), M(2), M(3) of the 2x2 case: each step a column, THEN a row pass.

    One instance per step t, so a failure (or a refusal) at one step hides none of the others.
    The limit does not depend on the order, M(1) does: row-first gives the fixture's
    predicted sinkhorn.cross_ratio_2x2.row_first, not M(1).
    """
    fx = "sinkhorn.cross_ratio_2x2"
    logits = value(fx, "logits", dtype, device)
    trajectory = expected(fx, "trajectory", dtype, device)
    if trajectory.shape[0] != len(TRAJECTORY_STEPS):
        raise ValueError(f"{fx}: the trajectory holds M(0)..M({trajectory.shape[0] - 1}), the gate expects "
                         f"{TRAJECTORY_STEPS}")
    sk = _sinkhorn(subject, backward)
    assert_close(sk(logits, t_max=t), trajectory[t], SINKHORN_TOL, what=f"M({t}) of the 2x2 case")


@pytest.mark.gate(equations=["mhc.eq9", "mhc.eq6"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("n", [3, 4])
def test_exact_limit_is_reached_by_t_max(subject, device, dtype, backward, n):
    """logits = log(D1 A D2), A doubly stochastic: the limit is A exactly, and M(20) is within 1e-22 of it.

    Compared with M(t_max) (the fixture's M_t_max), not with the limit, although here they agree
    far below either dtype's resolution.
    """
    fx = f"sinkhorn.exact_limit_n{n}"
    got = _sinkhorn(subject, backward)(value(fx, "logits", dtype, device), t_max=param(fx, "t_max"))
    assert_close(got, expected(fx, "M_t_max", dtype, device), SINKHORN_TOL, what=f"M(t_max) of the n = {n} scaled A")


@pytest.mark.gate(equations=["mhc.eq9", "mhc.table5.tmax"], mechanism="sinkhorn", gate_class="defaults_as_shipped")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_slow_case_is_m20_at_the_default_t_max_not_the_limit(subject, device, dtype, backward):
    """logits [[0, 0], [-12, 0]]: M(20) is still 0.022 from the limit; the subject must return M(20).

    Called WITHOUT t_max: the interface's default is Table 5's t_max = 20 (the spec's mhc.table5.tmax
    value, which the fixture's t_max must equal), and this slow case
    is where M(10) (the authors' code default) and M(20) differ visibly (by 95 % relative).
    Then the distance of M(20) to the limit is asserted to be the fixture's gap_to_limit
    (floor 1: a difference of O(1) entries), so a subject that returns the limit fails too.
    """
    fx = "sinkhorn.slow_2x2"
    if param(fx, "t_max") != TABLE5_T_MAX:
        raise ValueError(f"{fx}: fixture t_max {param(fx, 't_max')} is not Table 5's {TABLE5_T_MAX}")
    got = _sinkhorn(subject, backward)(value(fx, "logits", dtype, device))
    assert_close(got, expected(fx, "M_t_max", dtype, device), SINKHORN_TOL,
                 what="M(20) of the slow 2x2 case at the default t_max")
    gap = (got.detach().to(torch.float64) - expected(fx, "limit", torch.float64, got.device)).abs().max()
    assert_close(gap, expected(fx, "gap_to_limit"), UNIT_SCALE_TOL, dtype=dtype,
                 what="max|M(20) - limit| of the slow case (M(20) is not the limit)")


@pytest.mark.gate(equations=["mhc.eq9", "mhc.eq6"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("offset", ["minus200", "plus200"])
def test_extreme_offsets_are_removed_exactly(subject, device, dtype, backward, offset):
    """logits a_i + b_j +- 200 (rank one): M(t) = J/3 for every t >= 1, at any offset.

    Finite (exp(+200) overflows float32, exp(-200) underflows it: a linear-domain iteration
    returns nan or zeros here), equal to the oracle's J/3, and doubly stochastic.
    """
    fx = "sinkhorn.extreme_offsets"
    got = _sinkhorn(subject, backward)(value(fx, f"logits_{offset}", dtype, device), t_max=param(fx, "t_max"))
    _finite_doubly_stochastic_and(got, expected(fx, f"M_{offset}", dtype, device), dtype,
                                  f"M(t_max) at offset {offset}")


@pytest.mark.gate(equations=["mhc.eq9", "mhc.eq6"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_a_row_at_minus_400_is_normalised_not_floored(subject, device, dtype, backward):
    """Rows 0, 0, -400: the -400 row's sums are ~e^-400 (0 in float32), and it must still come out 1/3 each.

    A normalisation with a floor on the sum (source 004 section 4.1: clamp to 1e-7) leaves that
    row at 2.1e-31 in exact arithmetic (fixture prediction floor_linear.row_minus400) and at 0
    in float32: no floor may exist anywhere.
    """
    fx = "sinkhorn.extreme_offsets"
    got = _sinkhorn(subject, backward)(value(fx, "logits_row_minus400", dtype, device), t_max=param(fx, "t_max"))
    _finite_doubly_stochastic_and(got, expected(fx, "M_row_minus400", dtype, device), dtype,
                                  "M(t_max) with one row at -400")


def _finite_doubly_stochastic_and(got, want, dtype, what):
    m = got.detach().to(torch.float64)
    assert_bound(int((~torch.isfinite(m)).sum()), at_most=0, what=f"{what}: number of non-finite entries")
    assert_close(got, want, SINKHORN_TOL, what=what)
    n = m.shape[-1]
    bound = (SINKHORN_TOL.eps_multiple + n) * torch.finfo(dtype).eps  # entries each within 64 eps, n roundings (module doc)
    assert_bound(float((m.sum(-1) - 1).abs().max()), at_most=bound, what=f"{what}: max|row sum - 1|")
    assert_bound(float((m.sum(-2) - 1).abs().max()), at_most=bound,
                 what=f"{what}: max|column sum - 1| (converged: J/3)")


@pytest.mark.gate(equations=["mhc.eq9", "mhc.init_static_bias"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_static_init_10_identity_is_the_identity_to_the_predicted_distance(subject, device, dtype, backward, n):
    """b_res = 10 I: H = SK(10 I) has diag e^10/(e^10+n-1) and off 1/(e^10+n-1), so max|H - I| = (n-1)/(e^10+n-1).

    The whole matrix first (STIFF_TOL, entry by entry, so the 4.5e-5 off-diagonals are read to
    their own precision), then max|H - I| against the prediction with floor 1 (it is 1 - H_ii).
    """
    fx = "mhc.init_identity"
    group = f"n{n}"
    diag = _expected_entry(fx, group, "diag", torch.float64, device)
    off = _expected_entry(fx, group, "off", torch.float64, device)
    eye = torch.eye(n, dtype=torch.float64, device=device)
    want = off + (diag - off) * eye
    got = _sinkhorn(subject, backward)(10.0 * torch.eye(n, dtype=dtype, device=device), t_max=TABLE5_T_MAX)
    assert_close(got, want.to(dtype), STIFF_TOL, what=f"SK(10 I) at n = {n}")
    distance = (got.detach().to(torch.float64) - eye).abs().max()
    assert_close(distance, _expected_entry(fx, group, "identity_distance", torch.float64, device), UNIT_SCALE_TOL,
                 dtype=dtype, what=f"max|SK(10 I) - I| at n = {n} against (n-1)/(e^10+n-1)")


@pytest.mark.gate(equations=["mhc.eq9", "mhc.init_static_bias"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("n", [2, 4])
def test_one_unit_on_an_off_diagonal_logit_moves_h_res_by_order_e_minus_10(subject, device, dtype, backward, n):
    """Stiffness at 10 I: +1 on b_res[0, 1] moves SK by 7.76e-5 (not by order 1), and M(20) is not yet converged.

    SK(b) entry by entry (STIFF_TOL); max|SK(b) - SK(10 I)| and SK(b)'s column defect (7.7e-5: the
    unconverged direction after a final row pass) against the oracle with floor 1.
    """
    fx = "mhc.stiffness"
    group = f"n{n}"
    sk = _sinkhorn(subject, backward)
    base_logits = 10.0 * torch.eye(n, dtype=dtype, device=device)
    bumped_logits = base_logits.clone()
    bumped_logits[0, 1] += 1.0
    base = sk(base_logits, t_max=TABLE5_T_MAX)
    bumped = sk(bumped_logits, t_max=TABLE5_T_MAX)
    assert_close(base, _expected_entry(fx, group, "M_base", dtype, device), STIFF_TOL, what=f"SK(10 I), n = {n}")
    assert_close(bumped, _expected_entry(fx, group, "M_bumped", dtype, device), STIFF_TOL,
                 what=f"SK(10 I + e_01), n = {n}")
    b64, m64 = base.detach().to(torch.float64), bumped.detach().to(torch.float64)
    assert_close((m64 - b64).abs().max(), _expected_entry(fx, group, "max_change", torch.float64, device),
                 UNIT_SCALE_TOL, dtype=dtype, what=f"max|SK(b) - SK(10 I)|, n = {n}")
    assert_close((m64.sum(-2) - 1).abs().max(), _expected_entry(fx, group, "bumped_col_defect", torch.float64, device),
                 UNIT_SCALE_TOL, dtype=dtype, what=f"max|column sum - 1| of SK(b), n = {n}")


# ---- separation: how far each predicted defect lies from the right value ----------------------

# Predictions that are, BY CONSTRUCTION, equal to the right value on their fixture (no gate can see
# them there; the fixture says so): name -> why.
INVISIBLE_BY_CONSTRUCTION = {
    "sinkhorn.extreme.floor_linear.minus200":
        "exact arithmetic: the floor only delays a rank-one case; J/3 is still reached",
    "sinkhorn.extreme.floor_linear.plus200": "exact arithmetic: at +200 the sums are huge and the floor never binds",
}
# Predictions that model float32's exp range: compared at float32 only.
FLOAT32_ONLY = {"sinkhorn.extreme.floor_linear_f32range.minus200", "sinkhorn.extreme.floor_linear_f32range.plus200"}

# prediction field -> (fixture input, t_max override or None)
_INPUT_OF = {
    ("sinkhorn.cross_ratio_2x2", "trajectory"): ("logits", 1),  # the prediction is M(1)
    ("sinkhorn.slow_2x2", "M_t_max"): ("logits", None),
    ("sinkhorn.extreme_offsets", "M_minus200"): ("logits_minus200", None),
    ("sinkhorn.extreme_offsets", "M_plus200"): ("logits_plus200", None),
    ("sinkhorn.extreme_offsets", "M_row_minus400"): ("logits_row_minus400", None),
}


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_every_predicted_defect_lies_ten_tolerances_away(subject, device, dtype, backward):
    """Each Sinkhorn fixture prediction is >= 10 tolerances from the right value AND from the subject's output.

    Fixture side: a prediction closer than 10 tolerances to the expected value would be a weak
    gate (README, Design: separation). Subject side: a subject that has turned into a modelled
    defect sits ON its prediction (distance 0). The reading is the weakest subject-side
    separation; the weakest fixture-side one is recorded as `weakest_fixture_separation`.
    Predictions equal to the right value by construction are listed with the reason and skipped.
    """
    sk = _sinkhorn(subject, backward)
    fixture_side, subject_side = {}, {}
    for fx in ("sinkhorn.cross_ratio_2x2", "sinkhorn.slow_2x2", "sinkhorn.extreme_offsets"):
        t_max = param(fx, "t_max")
        for name, pred in fixture(fx)["predictions"].items():
            if name in INVISIBLE_BY_CONSTRUCTION or (name in FLOAT32_ONLY and dtype != torch.float32):
                continue
            field = pred["field"]
            inp, t_override = _INPUT_OF[(fx, field)]
            want = expected(fx, field, torch.float64, device)
            if t_override is not None:
                want = want[t_override]
            predicted = torch.tensor(_as_float(pred["float64"]), dtype=torch.float64, device=device)
            got = sk(value(fx, inp, dtype, device), t_max=t_override if t_override is not None else t_max)
            got64 = got.detach().to(torch.float64)
            fixture_side[name] = distance_in_tolerances(predicted, want, want, SINKHORN_TOL, dtype)
            subject_side[name] = distance_in_tolerances(predicted, got64, want, SINKHORN_TOL, dtype)
    assert_predictions_separated(fixture_side, subject_side, output="output")
