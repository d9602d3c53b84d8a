"""Gate: gradients through Block AttnRes (both modes) are the derivative of its forward.

fidelity discover --module fidelity.impl.torch.attnres found that no gate took a gradient
through the block schedule: a .detach() on the two-phase merge's weights, sums or partial
outputs (attn_with_stats) passed every gate. Here the subject's module, built by its factory
with L = 5 tanh sublayers in N = 2 blocks and random non-zero pseudo-queries, must pass a
float64 gradcheck (autograd against central differences of the same forward) with respect to
its input h1, in the direct and the two-phase mode: the Jacobian by the module's own backward
against central differences, by gradcheck's criterion (fidelity.gates.jacobians; the reading
is the worst ratio, <= 1 passes). The parameters' Jacobians are held by
test_attnres_module_gradients.py (every tensor, with and without learned gains).
"""
import pytest
import torch

from fidelity.gates.jacobians import assert_gradcheck_criterion, jacobian_by_backward, jacobian_by_central_differences
from attnres_sublayers import tanh_sublayers
from fidelity.subjects.subject import NotRun

FD_STEP, GRAD_ATOL, GRAD_RTOL = 1e-6, 1e-8, 1e-6  # float64 central differences of tanh and softmax

MECH = "block_attnres"
MODES = ["direct", "two_phase"]


@pytest.mark.gate(equations=["attnres.alg1", "attnres.eq6"], mechanism=MECH, gate_class="gradients_finite_differences")
@pytest.mark.parametrize("mode", MODES)
def test_gradients_through_the_block_schedule_pass_gradcheck_in_float64(subject, device, mode):
    L, N, d = 5, 2, 4
    g = torch.Generator().manual_seed(20261201)
    module = subject.get(MECH)(tanh_sublayers(g, L, d, device), d, N, dtype=torch.float64, device=device)
    params = dict(module.named_parameters())
    for name, shape in (("queries", (L, d)), ("output_query", (d,))):
        if name not in params:
            raise NotRun(f"the module has no parameter {name!r} (the interface's pseudo-queries)")
        with torch.no_grad():
            params[name].copy_(torch.randn(shape, generator=g, dtype=torch.float64).to(device))
    h1 = torch.randn(2, d, generator=g, dtype=torch.float64).to(device)
    # a leading batch of copies of h1: its positions are independent, each attends over depth only
    forward = lambda h: module(h, mode=mode)  # noqa: E731
    assert_gradcheck_criterion(jacobian_by_backward(forward, h1), jacobian_by_central_differences(forward, h1, FD_STEP),
                               atol=GRAD_ATOL, rtol=GRAD_RTOL, what=f"d Block AttnRes ({mode}) / d h1")
