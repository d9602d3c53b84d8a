"""Gate (gradients_finite_differences): the loop model's backward is the derivative of its forward.

float64, every arm graph (rezero, attnres, mHC sliced and paper, HC dynamic and static), a tiny config
(vocab 3, d 2, T 2, hidden_mult 1, n = 2 streams) built by the factory, then every parameter moved off its init
by a seeded Normal(0, 0.5^2) offset (at the init phi = 0, W = 0 and queries = 0 make several gradients
legitimately zero; a detach would hide behind them). The input is integer tokens, so the Jacobian is taken
with respect to every parameter (fidelity.gates.jacobians.assert_gradcheck_every_tensor: the model's own
backward against central differences of the same forward, taken along two seeded random directions per parameter
with every output element compared; a parameter outside the arm's graph reads 0 both ways).
A detached state between iterations, a detached arm coefficient or a parameter read through .data reads 0 by
backward where the differences see the dependence. The outputs are every iteration's logits and what the
interface says is in the autograd graph besides them: the trace's alpha (attnres) and coefficients (mHC), and,
for the mHC graphs, composite_h_res at the tokens' embeddings.

Tolerance: gradcheck's criterion |analytic - numeric| <= atol + rtol |numeric| with step 1e-6 (central
differences: truncation ~ step^2 = 1e-12, rounding ~ eps / step = 2e-10 at O(1) logits), atol 1e-8, rtol 1e-6.
"""

import pytest
import torch

from fidelity.gates.jacobians import assert_gradcheck_every_tensor
from fidelity.mechanisms.loop_model import config_class

FD_STEP, GRAD_ATOL, GRAD_RTOL = 1e-6, 1e-8, 1e-6
TINY = dict(vocab=3, d=2, T=2, hidden_mult=1, mhc_streams=2, hc_streams=2, mhc_dynamic_init_std=0.5)
GRAPHS = {
    "rezero": dict(arm="rezero"),
    "attnres": dict(arm="attnres"),
    "mhc_sliced": dict(arm="mhc", mhc_layout="sliced"),
    "mhc_paper": dict(arm="mhc", mhc_layout="paper"),
    "hc_dynamic": dict(arm="hc", hc_dynamic=True),
    "hc_static": dict(arm="hc", hc_dynamic=False),
}
EQUATIONS = {
    "rezero": ["attnres.placement_loop"],
    "attnres": ["attnres.placement_loop", "attnres.eq2", "attnres.eq3"],
    "mhc_sliced": ["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.layout.sliced"],
    "mhc_paper": ["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.layout.replicated"],
    "hc_dynamic": ["hc.eq5"],
    "hc_static": ["hc.eq5"],
}


@pytest.mark.gate(equations=sorted({e for v in EQUATIONS.values() for e in v}), mechanism="loop_model",
                  gate_class="gradients_finite_differences")
@pytest.mark.parametrize("graph", list(GRAPHS))
def test_the_loop_backward_matches_central_differences_for_every_parameter(subject, device, graph):
    """Every iteration's logits, two tokens, w.r.t. every parameter of the model (float64). Reading: the
    worst gradcheck ratio over all parameters (<= 1 passes; the message names the parameter)."""
    factory = subject.get("loop_model")
    config_type = config_class(factory)
    model = factory(config_type(**TINY, **GRAPHS[graph]), torch.Generator().manual_seed(31), dtype=torch.float64,
                    device=device)
    g = torch.Generator().manual_seed(32)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for p in params.values():
            p.add_(0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64).to(device))
    toks = torch.tensor([0, 2], dtype=torch.int64, device=device)
    def forward():
        logits, trace = model(toks, return_trace=True)
        extra = [t for r in trace for key in ("alpha", "coefficients") if key in r
                 for t in (r[key] if isinstance(r[key], tuple) else (r[key],))]
        if model.config.arm == "mhc":
            extra.append(model.composite_h_res(params["embed"][toks]))
        return tuple(logits) + tuple(extra)

    assert_gradcheck_every_tensor(forward, params, step=FD_STEP, atol=GRAD_ATOL, rtol=GRAD_RTOL,
                                  what=f"d (logits, trace, composite) / d parameters, {graph} graph of the loop model")
