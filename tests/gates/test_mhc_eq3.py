"""Gates: the mHC residual (Eqs. 3, 7, 8) against the oracle's hand-checkable fixtures, in both layouts.

Each gate builds ONE MhcResidual with the module's own defaults (t_max, eps, init) and then
sets the parameters the fixture states (alpha = 0 where it says so; b_post, b_res, phi, ...).
The layer body is a CONSTANT function (the fixture gives its output: y per stream in the
sliced layout, F in the paper layout) that records what it was given, so the residual
is under test and the body's input is asserted too. The output `out` is asserted first
(the fixtures' predicted red readings are about `out`), then H_pre, H_post, H_res themselves.

Tolerance: 64 eps relative. H_res carries the Sinkhorn's 64 eps (see
test_sinkhorn_fixtures.py); out = H_res x + H_post y adds a sigmoid, a product and an n-term
sum on O(1)..O(10) terms with no cancellation in these fixtures, well inside the same bound.
"""

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_bound, assert_close, assert_predictions_separated, distance_in_tolerances
from fidelity.gates.fixture_values import expected, fixture, value

DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
EQ3_TOL = Tolerance(eps_multiple=64, floor=1e-30)  # Sinkhorn's 64 eps plus a few O(1) operations


class ConstantBody:
    """F(u) = the fixture's given output, whatever u is; remembers the u it was called with."""

    def __init__(self, output: torch.Tensor):
        self.output = output
        self.inputs: list[torch.Tensor] = []

    def __call__(self, u: torch.Tensor) -> torch.Tensor:
        self.inputs.append(u)
        return self.output.expand(*u.shape[:-1], self.output.shape[-1])


def _module(subject, n, C, layout, dtype, device):
    return subject.get("mhc_residual")(n, C, layout=layout, dtype=dtype, device=device)


def _set(module, dtype, device, **params):
    with torch.no_grad():
        for name, v in params.items():
            getattr(module, name).copy_(torch.as_tensor(v, dtype=torch.float64).to(dtype=dtype, device=device))


def _static_fixture(subject, fx, layout, dtype, device):
    """Module with alpha = 0 and b_post, b_res (and b_pre when given) from fixture `fx`; returns (module, x)."""
    x = value(fx, "x", dtype, device)
    n, C = x.shape
    m = _module(subject, n, C, layout, dtype, device)
    if value(fx, "alpha").item() != 0:
        raise ValueError(f"{fx}: expected alpha = 0 (the static-coefficient fixtures)")
    params = dict(alpha_pre=0.0, alpha_post=0.0, alpha_res=0.0,
                  b_post=value(fx, "b_post"), b_res=value(fx, "b_res"))
    if "b_pre" in fixture(fx)["inputs"]:
        params["b_pre"] = value(fx, "b_pre")
    _set(m, dtype, device, **params)
    return m, x


def _assert_coefficients(m, x, fx, dtype, device, names=("H_post", "H_res")):
    h_pre, h_post, h_res = m.coefficients(x)
    got = {"H_pre": h_pre, "H_post": h_post, "H_res": h_res}
    for name in names:
        assert_close(got[name], expected(fx, name, dtype, device), EQ3_TOL, what=f"{name} of {fx}")


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq8", "mhc.eq9", "mhc.layout.sliced"], mechanism="mhc_residual")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_eq3_sliced_layout_on_the_hand_computed_fixture(subject, device, dtype):
    """Source 004's Eq. 3 fixture: n = 2, C = 2, alpha = 0, H_res = SK([[0, -ln 4], [-ln 4, 0]]) = [[.8, .2], [.2, .8]].

    out[j, c] = sum_i H_res[j, i] x[i, c] + H_post[j] y[j, c]; out[0, 0] = 8.950813376.
    The body runs at full width on the hidden vec(x) (sliced layout) and returns y.
    """
    fx = "mhc.eq3_sliced"
    m, x = _static_fixture(subject, fx, "sliced", dtype, device)
    body = ConstantBody(value(fx, "y", dtype, device).reshape(-1))
    out = m(x, body)
    assert_close(out, expected(fx, "out", dtype, device), EQ3_TOL, what="Eq. 3 out (sliced)")
    assert_close(body.inputs[0], x.reshape(-1), EQ3_TOL, what="the body's input: the whole hidden vec(x)")
    _assert_coefficients(m, x, fx, dtype, device)


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq8", "mhc.eq9", "mhc.layout.replicated"], mechanism="mhc_residual")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_eq3_paper_layout_mixes_down_with_h_pre_and_broadcasts_f(subject, device, dtype):
    """The paper's layout: u = H_pre x = [11/4, 4] feeds F, whose given output [10, 20] goes to stream j with H_post[j].

    H_pre = sigma([0, ln 3]) = [1/2, 3/4] exactly; out[1] = [18.95148952, 36.30297905].
    """
    fx = "mhc.eq3_paper"
    m, x = _static_fixture(subject, fx, "paper", dtype, device)
    body = ConstantBody(value(fx, "F", dtype, device))
    out = m(x, body)
    assert_close(out, expected(fx, "out", dtype, device), EQ3_TOL, what="Eq. 3 out (paper layout)")
    assert_close(body.inputs[0], expected(fx, "u", dtype, device), EQ3_TOL, what="the layer input u = H_pre x")
    _assert_coefficients(m, x, fx, dtype, device, names=("H_pre", "H_post", "H_res"))


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq8", "mhc.eq9"], mechanism="mhc_residual")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_eq3_non_symmetric_h_res_at_n3_is_not_transposed(subject, device, dtype):
    """b_res = ln(2A), A doubly stochastic and NOT symmetric: H_res = A exactly, so H_res and H_res^T differ.

    The only Eq. 3 fixture that can catch a transposed H_res: out[0, 0] = 11.05081338, and
    9.550813376 with H_res^T (prediction mhc.eq3_nonsym_n3.transposed_res). (At n = 2 every
    doubly stochastic limit is symmetric: mhc.eq3_nonsym_n2 says it cannot catch it.)
    """
    fx = "mhc.eq3_nonsym_n3"
    m, x = _static_fixture(subject, fx, "sliced", dtype, device)
    body = ConstantBody(value(fx, "y", dtype, device).reshape(-1))
    out = m(x, body)
    assert_close(out, expected(fx, "out", dtype, device), EQ3_TOL, what="Eq. 3 out with the non-symmetric H_res")
    _assert_coefficients(m, x, fx, dtype, device)


@pytest.mark.gate(equations=["mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.eq3", "mhc.table5.eps", "mhc.table5.tmax",
                             "mhc.eq14", "mhc.eq15", "mhc.eq16", "mhc.eq17_19"],
                  mechanism="mhc_residual")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("layout", ["sliced", "paper"])
def test_eq7_dynamic_coefficients_with_alpha_nonzero(subject, device, dtype, layout):
    """Eq. 7 with every alpha != 0: x' = RMSNorm(vec x) (eps = 1e-20), H~ = alpha (x' phi) + b, then Eq. 8 and Eq. 3.

    The module keeps its DEFAULT eps and t_max: Table 5's 1e-20 and 20 are what the fixture
    was computed with, so a changed default shows here (in float64; eps 1e-6 moves x' by 7e-8).
    Eqs. 14-19 (one matmul on the raw vec x, then 1/r, alpha, b and the same activations) are
    this function computed in another order ((x / r) phi = (x phi) / r), so the same numbers
    check them, whichever order a subject uses.
    """
    fx = "mhc.eq7_dynamic"
    x = value(fx, "x", dtype, device)
    n, C = x.shape
    m = _module(subject, n, C, layout, dtype, device)
    _set(m, dtype, device, **{k: value(fx, k) for k in ("phi_pre", "phi_post", "phi_res", "alpha_pre", "alpha_post",
                                                         "alpha_res", "b_pre", "b_post", "b_res")})
    if layout == "sliced":
        body = ConstantBody(value(fx, "y", dtype, device).reshape(-1))
        out = m(x, body)
        assert_close(out, expected(fx, "out_sliced", dtype, device), EQ3_TOL,
                     what="Eq. 3 out (sliced) with Eq. 7 coefficients")
    else:
        body = ConstantBody(value(fx, "F", dtype, device))
        out = m(x, body)
        assert_close(out, expected(fx, "out_paper", dtype, device), EQ3_TOL,
                     what="Eq. 3 out (paper) with Eq. 7 coefficients")
        assert_close(body.inputs[0], expected(fx, "u_paper", dtype, device), EQ3_TOL, what="u = H_pre x (paper)")
    _assert_coefficients(m, x, fx, dtype, device, names=("H_pre", "H_post", "H_res"))


# ---- separation --------------------------------------------------------------------------------

# Predictions equal (or all but equal) to the right value by construction: name -> why.
INVISIBLE_BY_CONSTRUCTION = {
    "mhc.eq3.transposed_post": "H_post is [1, n]: its transpose holds the same n numbers (the fixture says so)",
}


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq8", "mhc.eq9"], mechanism="mhc_residual")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_every_predicted_eq3_defect_lies_ten_tolerances_away(subject, device, dtype):
    """Each Eq. 3 prediction (sigma_post, no_sinkhorn, exp_unnormalised, offbyone_post, the n = 3 transposed_res)
    is >= 10 tolerances from the right `out` AND from the subject's `out`.

    Reading: the weakest subject-side separation; `weakest_fixture_separation` the weakest
    fixture-side one. mhc.eq3_nonsym_n2 is not used: at n = 2 a transposed H_res is invisible
    (its fixture says so), which is why mhc.eq3_nonsym_n3 exists.
    """
    fixture_side, subject_side = {}, {}
    for fx in ("mhc.eq3_sliced", "mhc.eq3_nonsym_n3"):
        m, x = _static_fixture(subject, fx, "sliced", dtype, device)
        got = m(x, ConstantBody(value(fx, "y", dtype, device).reshape(-1))).detach().to(torch.float64)
        want = expected(fx, "out", torch.float64, device)
        for name, pred in fixture(fx)["predictions"].items():
            if name in INVISIBLE_BY_CONSTRUCTION:
                continue
            if pred["field"] != "out":
                raise ValueError(f"{fx}: prediction {name} is about {pred['field']!r}, not out")
            predicted = torch.tensor(pred["float64"], dtype=torch.float64, device=device)
            fixture_side[name] = distance_in_tolerances(predicted, want, want, EQ3_TOL, dtype)
            subject_side[name] = distance_in_tolerances(predicted, got.to(device), want, EQ3_TOL, dtype)
    assert_predictions_separated(fixture_side, subject_side, output="out")
