"""Gates: the composite residual map of the weight-shared loop (mHC Eq. 4) stays on the Birkhoff polytope
and approaches J/n as |lambda2|^T (fixture mhc.composite_perturbed, source 004 section 5.1b).

With ONE shared block and H_res independent of x (phi = 0), the loop's composite over T
iterations is H_res^T. b_res = 2 (J - I) gives a symmetric doubly stochastic H_res with
lambda2 = (1 - e^2) / (1 + (n-1) e^2) < 0, so ||H^T - J/n||_2 = |lambda2|^T falls
monotonically while the off-diagonal mass alternates around n - 1 (the quantity a gate must
NOT assert monotone).

Tolerance: 64 eps with floor 1. The composite's entries lie in [0, 1] and carry T matmuls'
rounding (T n eps <= 32 eps at T = 8, n = 4) relative to that scale 1; the distance to J/n is
a norm of differences of such entries (|lambda2|^8 = 3.3e-5 at n = 4), so its error is
relative to 1 too, not to its own size.
"""

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.fixture_values import fixture
from fidelity.mechanisms.loop_model import config_class

DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
COMPOSITE_TOL = Tolerance(eps_multiple=64, floor=1.0)
FX = "mhc.composite_perturbed"


def _group(n: int, field: str, device) -> torch.Tensor:
    return torch.tensor(fixture(FX)["expected"][f"n{n}"][field]["float64"], dtype=torch.float64, device=device)


@pytest.mark.gate(equations=["mhc.composite", "mhc.eq4", "mhc.eq6"], mechanism="loop_model")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", [2, 4])
def test_composite_h_res_power_t_approaches_uniform_mixing_as_lambda2_power_t(subject, device, dtype, n):
    """The loop model's composite_h_res for T = 1..8 with b_res = 2 (J - I): ||H^T - J/n||_2 = |lambda2|^T,
    then every entry of H^T (diag, off) against the oracle, then closure: rows and columns sum to 1
    and no entry is negative.

    The distance is asserted first: the fixture's prediction mhc.composite.n{n}.not_unrolled
    (the composite taken once, so the distance stays |lambda2|) is about it. Before any subject
    call, the fixture's own separation of that prediction is checked (>= 10 tolerances).
    """
    fx = fixture(FX)
    want = _group(n, "distance", device)
    pred = fx["predictions"][f"mhc.composite.n{n}.not_unrolled"]
    fixture_separation = float((torch.tensor(pred["float64"], dtype=torch.float64, device=device) - want).abs().max()
                               / COMPOSITE_TOL.rtol(dtype))
    readings.record(fixture_separation, "fixture_separation")
    if fixture_separation < 10:
        raise ValueError(f"{FX}: the not-unrolled prediction lies {fixture_separation:.3g} tolerances away: weak gate")

    factory = subject.get("loop_model")
    config_type = config_class(factory)
    d = 8
    model = factory(config_type(arm="mhc", d=d, mhc_streams=n, mhc_layout="sliced"), torch.Generator().manual_seed(3),
                    dtype=dtype, device=device)
    off_logit = float(fx["inputs"]["b_res_offdiagonal"])
    eye = torch.eye(n, dtype=torch.float64, device=device)
    with torch.no_grad():
        model.mhc.b_res.copy_((off_logit * (1 - eye)).to(dtype))
    x = torch.randn(3, d, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    x = x.to(dtype=dtype, device=device)
    Ts = fx["inputs"]["T"]
    with torch.no_grad():
        composites = torch.stack([model.composite_h_res(x, T).to(torch.float64) for T in Ts])  # [len(T), 3, n, n]
    uniform = torch.full((n, n), 1.0 / n, dtype=torch.float64, device=device)
    distance = torch.linalg.matrix_norm(composites - uniform, ord=2)  # [len(T), 3]
    assert_close(distance, want[:, None].expand_as(distance), COMPOSITE_TOL, dtype=dtype,
                 what=f"||H_res^T - J/n||_2 for T = {Ts[0]}..{Ts[-1]}, n = {n}, against |lambda2|^T")
    diag, off = _group(n, "H_T_diag", device), _group(n, "H_T_off", device)
    want_entries = off[:, None, None, None] + (diag - off)[:, None, None, None] * eye
    assert_close(composites, want_entries.expand_as(composites), COMPOSITE_TOL, dtype=dtype,
                 what=f"entries of H_res^T, T = {Ts[0]}..{Ts[-1]}, n = {n}")
    bound = COMPOSITE_TOL.rtol(dtype)
    assert_bound(float(composites.min()), at_least=0.0, what=f"smallest entry of H_res^T, n = {n}")
    assert_bound(float((composites.sum(-1) - 1).abs().max()), at_most=bound,
                 what=f"max|row sum - 1| of H_res^T, n = {n}")
    assert_bound(float((composites.sum(-2) - 1).abs().max()), at_most=bound,
                 what=f"max|column sum - 1| of H_res^T, n = {n}")


FX_ASYM = "loop_model.composite_asymmetric"


@pytest.mark.gate(equations=["mhc.composite", "mhc.eq4", "mhc.eq9"], mechanism="loop_model")
@pytest.mark.parametrize("T", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_composite_h_res_is_the_matrix_power_of_an_asymmetric_h_res(subject, device, dtype, T):
    """n = 3 (sliced, d = 6), phi = 0 and b_res from fixture loop_model.composite_asymmetric: H_res = SK(b_res) is
    not symmetric (max |H - H^t| = 0.148), so composite_h_res(x, T) must be H_res^T itself, T = 1..4, with the
    factors in order and unflipped (a transposed factor or product moves entries by up to 0.148). One instance
    per T; each checks the module's own H_res (its coefficients at the same x) against the oracle first.
    Tolerance: 64 eps with floor 1, as above (entries in [0, 1], T matmuls of rounding)."""
    fx = fixture(FX_ASYM)
    factory = subject.get("loop_model")
    config_type = config_class(factory)
    model = factory(config_type(arm="mhc", d=6, mhc_streams=3, mhc_layout="sliced"), torch.Generator().manual_seed(3),
                    dtype=dtype, device=device)
    with torch.no_grad():
        model.mhc.b_res.copy_(torch.tensor(fx["inputs"]["b_res"], dtype=torch.float64).to(dtype=dtype, device=device))
    x = torch.randn(2, 6, generator=torch.Generator().manual_seed(4), dtype=torch.float64).to(dtype=dtype, device=device)
    with torch.no_grad():
        _, _, h_res = model.mhc.coefficients(model.mhc.expand(x))
    want_h = torch.tensor(fx["expected"]["H_res"]["float64"], dtype=torch.float64, device=device)
    assert_close(h_res, want_h.expand_as(h_res), COMPOSITE_TOL, dtype=dtype, what="the shared block's H_res, n = 3")
    with torch.no_grad():
        got = model.composite_h_res(x, T)
    want = torch.tensor(fx["expected"]["H_T"][str(T)]["float64"], dtype=torch.float64, device=device)
    assert_close(got, want.expand_as(got), COMPOSITE_TOL, dtype=dtype,
                 what=f"composite_h_res(x, T = {T}) against H_res^T (asymmetric H_res, n = 3)")
