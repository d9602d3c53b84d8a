"""Gates: gradients through the mHC residual as built by its factory, against central differences and the oracle.

Every gate builds ONE module with factory(3, 2, layout=, dtype=, device=[, sinkhorn_backward=]) and
writes the nine parameters of the seeded point mhc.module_jacobian (phi in [-1, 1], alpha in
[1/4, 1], b_res in [-1, 1]: far from the init, where phi = 0 makes the alphas' gradient
legitimately zero and 10 I makes the Sinkhorn stiff); eps and t_max stay as shipped. The layer
body is the fixture's linear F(v) = W v, so the gradient also runs through the body's input
(u = H_pre x in the paper layout, vec x in the sliced one). x is one non-constant token.

- gradients_finite_differences: float64 backward against central differences of the same module,
  for x and every parameter (fidelity.gates.jacobians.assert_gradcheck_every_tensor: the differences along two
  seeded random directions per tensor, every output element compared);
- gradient_reach: x and every wired parameter get a non-zero gradient; in the sliced layout
  phi_pre, alpha_pre, b_pre get none (mhc.layout.sliced: H_pre is computed, never read);
- gradients_from_oracle: d out / d x, d out / d phi_res and d out / d b_res equal the oracle's
  (central differences of fidelity.oracles.mhc.residual_mpf at 120 digits, stored at 40).

The Sinkhorn inside runs by either route: "autograd" is the factory's default (not passed),
"manual" is asked for with sinkhorn_backward= (a subject that cannot: NotRun).
"""
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.fixture_values import fixture
from fidelity.gates.gradient_reach import assert_gradients_reach, dead_gradients
from fidelity.gates.jacobians import assert_gradcheck_every_tensor, jacobian_of_tensor
from mhc_module_point import module_at_fixture

FIXTURE = "mhc.module_jacobian"
LAYOUTS = ["paper", "sliced"]
ROUTES = ["autograd", "manual"]
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
UNWIRED_IN_SLICED = ("phi_pre", "alpha_pre", "b_pre")  # mhc.layout.sliced: H_pre computed, never read
# float64 central differences at h = 1e-6 of O(1) smooth maps: truncation h^2 |f'''| ~ 1e-12, rounding
# eps |f| / h ~ 2e-10; gradcheck's criterion atol + rtol |numeric| with atol 1e-8, rtol 1e-6 keeps ~50x room
# (measured worst ratio below) and is 1e4x below a detached path (whole Jacobian blocks at 0, O(0.1) entries).
FD_STEP, FD_ATOL, FD_RTOL = 1e-6, 1e-8, 1e-6
# Against the oracle, relative to max|J|: the backward through 40 normalisations, RMSNorm and the
# sigmoids rounds O(max|J|) terms, self-correcting like the forward (measured on the torch subject:
# <= 0.86 eps in float32, <= 1.9 eps in float64, either route); 32 eps leaves 16x room.
ORACLE_EPS_MULTIPLE = 32


def point_module(subject, layout, dtype, device, route):
    """(module, x, body, parameters by name) at the fixture's seeded point."""
    return module_at_fixture(subject, FIXTURE, layout, dtype, device, route)


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.layout.sliced", "mhc.layout.replicated"],
                  mechanism="mhc_residual", gate_class="gradients_finite_differences")
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_module_backward_matches_central_differences_for_x_and_every_parameter(subject, device, layout, route):
    """gradcheck's criterion on d out / d x and d out / d p for all nine p, float64, the module's own backward."""
    module, x, body, params = point_module(subject, layout, torch.float64, device, route)
    x.requires_grad_(True)
    assert_gradcheck_every_tensor(lambda: module(x, body), {"x": x, **params}, step=FD_STEP, atol=FD_ATOL,
                                  rtol=FD_RTOL, what=f"d out / d (x, every parameter), {layout} layout, {route} Sinkhorn")


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.layout.sliced", "mhc.layout.replicated"],
                  mechanism="mhc_residual", gate_class="gradient_reach")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_x_and_every_wired_parameter_get_a_gradient(subject, device, layout, route, dtype):
    """One backward of a seeded random cotangent on out: x and each wired parameter get a non-zero gradient
    (all nine in the paper layout; the sliced layout's phi_pre, alpha_pre, b_pre are the next gate's)."""
    module, x, body, params = point_module(subject, layout, dtype, device, route)
    x.requires_grad_(True)
    wired = {k: p for k, p in params.items() if not (layout == "sliced" and k in UNWIRED_IN_SLICED)}
    assert_gradients_reach(lambda: module(x, body), {"x": x, **wired},
                           what=f"{layout} layout, {route} Sinkhorn, {str(dtype).replace('torch.', '')}")


@pytest.mark.gate(equations=["mhc.layout.sliced"], mechanism="mhc_residual", gate_class="gradient_reach")
@pytest.mark.parametrize("route", ROUTES)
def test_sliced_layout_gives_phi_pre_alpha_pre_b_pre_no_gradient(subject, device, route):
    """mhc.layout.sliced: H_pre is computed and never read, so its three parameters get None or zero.

    Reading: the number of H_pre parameters that got a non-zero gradient (must be 0)."""
    module, x, body, params = point_module(subject, "sliced", torch.float64, device, route)
    dead = dead_gradients(lambda: module(x, body), params)
    reached = [k for k in UNWIRED_IN_SLICED if k not in dead]
    assert_bound(len(reached), at_most=0, reading_name="unwired_with_gradient",
                 what=f"sliced layout ({route} Sinkhorn): H_pre's parameters that got a gradient: {reached}")


def _oracle_jacobian(layout, wrt, dtype, device):
    raw = fixture(FIXTURE)["expected"][layout][f"d_out_d_{wrt}"]["float64"]
    return torch.tensor(raw, dtype=torch.float64).to(dtype=dtype, device=device)


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.layout.sliced", "mhc.layout.replicated"],
                  mechanism="mhc_residual", gate_class="gradients_from_oracle")
@pytest.mark.parametrize("wrt", ["x", "phi_res", "b_res"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_module_jacobian_equals_the_oracles(subject, device, layout, route, dtype, wrt):
    """J[k, *p.shape] = d out_k / d p by the module's backward, against the oracle's 40-digit Jacobian,
    element by element, relative to max|J| (32 eps of the dtype)."""
    module, x, body, params = point_module(subject, layout, dtype, device, route)
    target = x.requires_grad_(True) if wrt == "x" else params[wrt]
    got = jacobian_of_tensor(lambda: module(x, body), target)
    want = _oracle_jacobian(layout, wrt, torch.float64, device)
    scale = float(want.abs().max())
    assert_close(got, want, Tolerance(eps_multiple=ORACLE_EPS_MULTIPLE, floor=scale), dtype=dtype,
                 what=f"d out / d {wrt} against the oracle ({layout} layout, {route} Sinkhorn), relative to "
                      f"max|J| = {scale:.3g}")
