"""Gate: the trace's alpha carries its whole gradient, in both modes, as users differentiate it.

Issue 13: fidelity discover --module fidelity.impl.torch.attnres found three mutants that detach
part of the two-phase alpha (attn_with_stats returning p.detach(); phase 1's probabilities p1
detached; (p1 / l1) detached) and pass every gate. The trace's alpha is a value users read and
differentiate (an auxiliary loss on the depth mixture, a probe of it): the interface
(fidelity.mechanisms.block_attnres, forward's return_trace) says the trace tensors are in the
autograd graph. The trace gate's gradient_reach instance sees only whether a gradient arrives at
all; these mutants cut one of the two phases' contributions and leave the other, so some gradient
still arrives.

gradients_finite_differences: the float64 Jacobian of every trace entry's alpha (concatenated) by
the module's backward, against central differences of its forward (along two seeded random directions per
tensor, fidelity.gates.jacobians.assert_gradcheck_every_tensor), for h1, queries and (with
learned gains) gains, by gradcheck's criterion. The module is the one the module gradient gate
builds (attnres_sublayers.seeded_block_module: L = 5 tanh sublayers in N = 2 blocks, d = 4, every
parameter at seeded non-init values), in both modes and both backward routes. The output is a
softmax over two or three sources, O(1), so the module gradient gate's bounds apply as they are
(test_attnres_module_gradients.py: step 1e-6, atol 1e-8, rtol 1e-6; a detached phase is an O(1)
relative change of some entries). Reading: the worst ratio |analytic - numeric| / (atol + rtol
|numeric|), <= 1 passes.
"""
from __future__ import annotations

import pytest

from attnres_sublayers import seeded_block_module
from fidelity.gates.jacobians import assert_gradcheck_every_tensor

MECH = "block_attnres"
MODES = ["direct", "two_phase"]
ROUTES = ["autograd", "manual"]
GAINS = [False, True]
GAIN_IDS = ["no_gain", "learned_gain"]
L, N, D = 5, 2, 4
FD_STEP, GRAD_ATOL, GRAD_RTOL = 1e-6, 1e-8, 1e-6  # the module gradient gate's; see the docstring


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq6", "attnres.alg1", "attnres.rmsnorm_gain"],
                  mechanism=MECH, gate_class="gradients_finite_differences")
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("learned_gain", GAINS, ids=GAIN_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_every_trace_alpha_passes_gradcheck_for_the_input_queries_and_gains(subject, device, mode, learned_gain,
                                                                            backward):
    module, tensors = seeded_block_module(subject, device, mode, learned_gain, backward, L, N, D)
    h1 = tensors["h1"]
    wrt = {name: t for name, t in tensors.items() if name in ("h1", "queries", "gains")}

    def alphas():
        _, trace = module(h1, mode=mode, return_trace=True)
        return tuple(entry["alpha"] for entry in trace)

    assert_gradcheck_every_tensor(alphas, wrt, step=FD_STEP, atol=GRAD_ATOL, rtol=GRAD_RTOL,
                                  what=f"d (every trace alpha) / d (h1, queries"
                                       f"{', gains' if learned_gain else ''}) ({mode}, {backward})")
