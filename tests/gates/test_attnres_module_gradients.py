"""Gates: gradients through the Block AttnRes module, for its input and every parameter.

Issue 14: a residual whose skip path is detached, or a parameter read through .data, passed
every gate, because the only gradient gate through Block AttnRes
(test_attnres_block_gradients.py) differentiates with respect to h1 alone. Here the module is
built by the subject's factory, L = 5 tanh sublayers in N = 2 blocks ([1, 2, 3], [4, 5]), d = 4,
with every parameter moved off its init to seeded values (at zero queries a gain's gradient is
legitimately zero: q . (g v) = 0), in both modes, with and without learned gains, both routes:

- gradients_finite_differences: the float64 Jacobian of h_out by the module's backward against
  central differences of its forward (along two seeded random directions per tensor, fidelity.gates.jacobians),
  for h1 and every parameter (queries, output_query, and
  gains, output_gain with learned_gain=True), by gradcheck's criterion (the reading is the worst
  ratio |analytic - numeric| / (atol + rtol |numeric|) over all of them, <= 1 passes);
- gradient_reach: one backward of a seeded cotangent gives each tensor a non-zero gradient, one
  instance per tensor; for queries and gains every sublayer's row must get one, except layer 1's
  (row 0): layer 1 attends b_0 alone, a one-source softmax is 1 whatever the score, so its row has
  no effect and a zero gradient there is the right answer (fixture attnres.module_alive checks
  that the oracle's output does not move with it either);
- gradient_reach whatever the names: the module as built, every parameter it holds (named_parameters(),
  a package's own names) moved to seeded values, in float64 or else float32: h1 and each parameter get a
  non-zero gradient (a package with per-layer query parameters or no output query is held too).
"""
from __future__ import annotations

import pytest
import torch

from fidelity.gates.compare import assert_bound
from fidelity.gates.gradient_reach import assert_gradients_reach, dead_gradients
from fidelity.gates.jacobians import assert_gradcheck_every_tensor
from attnres_sublayers import seeded_block_module, tanh_sublayers

MECH = "block_attnres"
MODES = ["direct", "two_phase"]
ROUTES = ["autograd", "manual"]
GAINS = [False, True]
GAIN_IDS = ["no_gain", "learned_gain"]
L, N, D = 5, 2, 4
FIRST_LAYER_ROW = 0  # layer 1 attends b_0 alone: its query and gain rows have no effect (see the docstring)

# float64 central differences of tanh and softmax with step 1e-6: truncation ~ h^2 |f'''| ~ 1e-12,
# rounding ~ eps |f| / h ~ 2e-10 of the output's scale (~1); atol 1e-8 and rtol 1e-6 leave > 50x room
# (the h1-only gate's bounds) and sit far below a dropped path (an O(1) relative change).
FD_STEP, GRAD_ATOL, GRAD_RTOL = 1e-6, 1e-8, 1e-6


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq5", "attnres.eq6", "attnres.alg1", "attnres.rmsnorm_gain"],
                  mechanism=MECH, gate_class="gradients_finite_differences")
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("learned_gain", GAINS, ids=GAIN_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_block_module_passes_gradcheck_for_its_input_and_every_parameter(subject, device, mode, learned_gain,
                                                                         backward):
    module, tensors = seeded_block_module(subject, device, mode, learned_gain, backward, L, N, D)
    h1 = tensors["h1"]
    assert_gradcheck_every_tensor(lambda: module(h1, mode=mode), tensors, step=FD_STEP, atol=GRAD_ATOL,
                                  rtol=GRAD_RTOL, what=f"d h_out / d (h1 and every parameter) ({mode}, {backward}"
                                                       f"{', learned gains' if learned_gain else ''})")


def _reach_instances():
    out = []
    for learned_gain, gid in zip(GAINS, GAIN_IDS):
        for name in ["h1", "queries", "output_query"] + (["gains", "output_gain"] if learned_gain else []):
            out.append(pytest.param(learned_gain, name, id=f"{gid}-{name}"))
    return out


@pytest.mark.gate(equations=["attnres.eq1", "attnres.eq2", "attnres.eq5", "attnres.eq6", "attnres.alg1",
                             "attnres.rmsnorm_gain"], mechanism=MECH, gate_class="gradient_reach")
@pytest.mark.parametrize("learned_gain,name", _reach_instances())
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("mode", MODES)
def test_the_input_and_every_parameter_of_the_block_module_receive_a_gradient(subject, device, mode, backward,
                                                                              learned_gain, name):
    """One backward of h_out under a seeded cotangent: `name` gets a non-zero gradient; for queries and
    gains, each sublayer's row does (layer 1's excepted, see the module docstring). Reading: the number of
    rows (1 for an unrowed tensor) with no gradient or an all-zero one."""
    module, tensors = seeded_block_module(subject, device, mode, learned_gain, backward, L, N, D)
    h1, t = tensors["h1"], tensors[name]
    dead = dead_gradients(lambda: module(h1, mode=mode), {name: t})
    if name in ("queries", "gains"):
        rows = [l for l in range(L) if l != FIRST_LAYER_ROW]
        dead_rows = rows if t.grad is None else [l for l in rows if not bool(torch.any(t.grad[l] != 0))]
        assert_bound(len(dead_rows), at_most=0, reading_name="dead_gradients",
                     what=f"rows of {name} (sublayer l - 1) with no gradient or an all-zero one ({mode}, {backward}): "
                          f"{dead_rows}")
    else:
        assert_bound(len(dead), at_most=0, reading_name="dead_gradients",
                     what=f"{name} gets no gradient or an all-zero one ({mode}, {backward})")


@pytest.mark.gate(equations=["attnres.eq1", "attnres.eq2", "attnres.eq5", "attnres.eq6", "attnres.alg1"],
                  mechanism=MECH, gate_class="gradient_reach")
@pytest.mark.parametrize("mode", MODES)
def test_h1_and_every_parameter_the_block_module_holds_receive_a_gradient_whatever_their_names(subject, device, mode):
    """The module as its factory builds it (no optional argument), every parameter it holds moved to seeded
    values by named_parameters() (so a package's own names do: its per-layer queries count as parameters too),
    one backward of h_out under a seeded cotangent: h1 and each parameter get a non-zero gradient. In float64
    where the subject computes in it, else float32 (a gradient that arrives needs no precision). Reading: the
    number of tensors with no gradient or an all-zero one, each named in the message."""
    dtype = torch.float64 if subject.supports(MECH, dtype=torch.float64) else torch.float32
    g = torch.Generator().manual_seed(20261219)
    module = subject.get(MECH)(tanh_sublayers(g, L, D, device, dtype), D, N, mode=mode, dtype=dtype, device=device)
    params = dict(module.named_parameters())
    with torch.no_grad():
        for p in params.values():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64).to(p))
    h1 = torch.randn(2, D, generator=g, dtype=torch.float64).to(dtype=dtype, device=device).requires_grad_(True)
    in_dtype = str(dtype).removeprefix("torch.")
    assert_gradients_reach(lambda: module(h1), {"h1": h1, **params},
                           what=f"d h_out / d (h1 and every parameter the module holds) ({mode}, {in_dtype}); each one "
                                "named here is dead")
