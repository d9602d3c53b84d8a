"""Gate: the Sinkhorn's Jacobian (mHC Eq. 9) equals the oracle's, by every gradient route of every subject.

The fixture sinkhorn.jacobian_3x3 holds J[i, j, k, l] = d M(t_max)[i, j] / d logits[k, l] at a
seeded 3x3 (logits k/4, |k| <= 20; M(20) still unconverged, column defect 3.9e-3, so the axis and
order of every step shows), t_max = 20, from central differences of the oracle's Eq. 9 at 120
digits (stored at 40). The other Sinkhorn gradient gates compare a route with autograd of the same
forward or with central differences of the subject itself at ~1e-6; this one holds the backward
to an answer computed without the subject, at the dtype's own resolution, so a backward that is
wrong by less than a finite difference can see (a rounding, a dropped small term) is seen too.

The subject's Jacobian comes from its own backward, batched (fidelity.gates.jacobians.
jacobian_by_backward: one call with n^2 copies). Tolerance relative to max|J| = 0.14 (an
absolute bound would depend on n and the logits' scale): the backward's 40 adjoint steps round
O(max|J|) terms (measured 3.5 .. 4.0 eps on the torch and Triton subjects, both routes and
dtypes); 32 eps leaves 8x room.
"""
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import expected, param, value
from fidelity.gates.jacobians import jacobian_by_backward
from fidelity.gates.routes import routed

FIXTURE = "sinkhorn.jacobian_3x3"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
ROUTES = ["autograd", "manual"]
ORACLE_EPS_MULTIPLE = 32  # measured 3.5 .. 4.0 eps relative to max|J| (module docstring)


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn", gate_class="gradients_from_oracle")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_jacobian_of_eq9_equals_the_oracles_40_digit_jacobian(subject, device, backward, dtype):
    """d M(20) / d logits at the 3x3 fixture, by the route's backward, element by element against the oracle."""
    fn = routed(subject, "sinkhorn", backward, gradient=True)
    t_max = param(FIXTURE, "t_max")
    J = jacobian_by_backward(lambda L: fn(L, t_max=t_max), value(FIXTURE, "logits", dtype, device))
    want = expected(FIXTURE, "jacobian", torch.float64, device)
    scale = float(want.abs().max())
    assert_close(J, want, Tolerance(eps_multiple=ORACLE_EPS_MULTIPLE, floor=scale), dtype=dtype,
                 what=f"d M(t_max) / d logits ({backward} route) against the oracle, relative to max|J| = {scale:.3g}")
