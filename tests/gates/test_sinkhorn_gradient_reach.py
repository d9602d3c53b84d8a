"""Gate: the logits receive a non-zero gradient through the Sinkhorn projection, on every route and dtype.

A detached path (the iteration run on logits.detach(), an exp outside the graph) leaves H~res
with no gradient, so nothing upstream of the projection learns; the float64 gradchecks see it,
but only in float64, and a subject declaring float32 alone never runs them. One backward of a
seeded cotangent on M(t_max) at the 3 x 3 fixture of the Jacobian gate must reach the logits
(fidelity.gates.gradient_reach; reading `dead_gradients`, 0 passes).
"""
import pytest
import torch

from fidelity.gates.fixture_values import value
from fidelity.gates.gradient_reach import assert_gradients_reach
from fidelity.gates.routes import routed

FIXTURE = "sinkhorn.jacobian_3x3"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
ROUTES = ["autograd", "manual"]


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn", gate_class="gradient_reach")
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_the_logits_receive_a_gradient_through_the_projection(subject, device, dtype, backward):
    sinkhorn = routed(subject, "sinkhorn", backward, gradient=True)
    logits = value(FIXTURE, "logits", dtype, device).requires_grad_(True)
    assert_gradients_reach(lambda: sinkhorn(logits), {"logits": logits},
                           what=f"d M(t_max) / d logits ({backward} route)")
