"""Gates: the AttnRes arm of the weight-shared loop model (attnres.placement_loop, record 000 §4).

The subject's `loop_model` factory is the only implementation touched:
model = LoopModel(LoopConfig(arm="attnres", ...), generator, dtype=, device=),
model(tokens, return_trace=True) -> (logits per iteration, trace per iteration with
"y" (the body output y_k) and "state" (the state leaving iteration k)). h_0 is the
token embedding, read from the documented parameter `embed`.

AttnRes sits AFTER the body: the state leaving iteration k is the softmax mixture over
{h_0, y_0, ..., y_k}. At the zero init every weight is 1/(k+2), so the state is the
plain mean (h_0 + y_0 + ... + y_k)/(k+2) and the readout of iteration k depends on y_k
with weight exactly 1/(k+2).

Tolerance (relative to the compared tensor's scale): a softmax of zeros (1/(k+2), one
rounding) times a sum of <= 4 terms: a few eps. Readings: <= 1.3 eps (f32 and f64); 8 eps.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.nn import functional as F

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.routes import require_gradient
from fidelity.impl.torch.loop_model import LoopConfig  # the configuration record (data, not the subject's code)
from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS

MECH = "loop_model"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
MEAN_TOL = Tolerance(eps_multiple=8)
T = 3


def _scaled(tol: Tolerance, expected: torch.Tensor) -> Tolerance:
    return dataclasses.replace(tol, floor=max(float(expected.detach().abs().max()), tol.floor))


def _model(subject, convention, dtype, device):
    config = LoopConfig(vocab=16, d=8, T=T, arm="attnres", score_convention=convention)
    model = subject.get(MECH)(config, torch.Generator().manual_seed(20260318), dtype=dtype, device=device)
    tokens = torch.tensor([[1, 5, 7], [3, 3, 0]], device=device)
    return model, tokens


@pytest.mark.gate(equations=["attnres.placement_loop", "attnres.init_zero_query", "attnres.eq1", "attnres.eq3"],
                  mechanism=MECH)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_state_at_init_is_the_equal_weight_average_of_h0_and_every_body_output(subject, device, dtype, convention):
    """Record 000 §4: at init the state after iteration 0 is (h_0 + y_0)/2, after iteration 1
    (h_0 + y_0 + y_1)/3, and so on for every iteration: the body's own output is a source.
    """
    model, tokens = _model(subject, convention, dtype, device)
    with torch.no_grad():
        _, trace = model(tokens, return_trace=True)
        h0 = F.embedding(tokens, model.embed).to(torch.float64)
        worst = 0.0
        for k in range(T):
            ys = [trace[j]["y"].to(torch.float64) for j in range(k + 1)]
            want = (h0 + sum(ys)) / (k + 2)
            r = assert_close(trace[k]["state"], want, _scaled(MEAN_TOL, want), dtype=dtype,
                             what=f"state after iteration {k} = (h_0 + y_0 + ... + y_{k}) / {k + 2} ({convention})")
            worst = max(worst, r)
    readings.record(worst, "reading")


@pytest.mark.gate(equations=["attnres.placement_loop", "attnres.eq1"], mechanism=MECH)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_readout_of_every_iteration_contains_that_iterations_body_output(subject, device, dtype, convention):
    """Not the depth-minus-one defect (record 000 §4): the readout of iteration k depends on
    y_k. At init d(c . logits_k)/d y_k = (c @ W_readout) / (k + 2) exactly (the zero query
    makes the scores, hence alpha, independent of y_k); a readout placed before the body's
    mixture would have no gradient to y_k at all.
    """
    require_gradient(subject, MECH)
    model, tokens = _model(subject, convention, dtype, device)
    logits, trace = model(tokens, return_trace=True)
    g = torch.Generator().manual_seed(20260319)
    worst = 0.0
    for k in range(T):
        c = torch.randn(logits[k].shape, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)
        (grad,) = torch.autograd.grad((logits[k] * c).sum(), trace[k]["y"], retain_graph=True, allow_unused=True)
        if grad is None:
            grad = torch.zeros_like(trace[k]["y"])  # the readout does not depend on y_k at all
        want = (c.to(torch.float64) @ model.readout_w.detach().to(torch.float64)) / (k + 2)
        r = assert_close(grad, want, _scaled(MEAN_TOL, want), dtype=dtype,
                         what=f"d(c . logits_{k})/d y_{k} = (c @ W_readout) / {k + 2} ({convention})")
        worst = max(worst, r)
    readings.record(worst, "reading")
