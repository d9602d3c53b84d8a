"""Gates (train_eval): every module mechanism gives the same bits in eval mode as in training mode.

None of these papers gives a module a mode-dependent part (no dropout, no batch statistics: mHC's
Sinkhorn runs its t_max steps at inference as in training, HC's dynamic coefficients are computed
from the input in both, Block AttnRes attends over the same sources), so a module whose eval() takes
another path (a cached H_res, fewer Sinkhorn steps, the static coefficients only, a cheaper attention)
serves at inference something no other gate measured: a fresh module is in training mode and no other
gate switches it. Each module is built by its factory as shipped (the loop model's parameters then
moved off their init by a seeded step, as training moves them) and called on one input in training
mode, in eval mode and in training mode again (fidelity.gates.train_eval); the forward outputs must
agree bit for bit. Reading: the number of results that differ from training mode's (must be 0).
"""
import pytest
import torch

from attnres_sublayers import seeded_block_module
from fidelity.gates.train_eval import assert_same_in_train_and_eval
from hc_module_point import module_at_fixture as hc_module_at_fixture
from loop_model_point import GRAPHS, build, tokens
from mhc_module_point import module_at_fixture as mhc_module_at_fixture


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9"], mechanism="mhc_residual",
                  gate_class="train_eval")
@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_the_mhc_residual_gives_the_same_bits_in_eval_mode(subject, device, layout):
    module, x, body, _ = mhc_module_at_fixture(subject, "mhc.module_jacobian", layout, torch.float32, device)
    assert_same_in_train_and_eval(lambda: module(x, body), modules={"module": module},
                                  what=f"one {layout}-layout mHC module at the fixture's point")


@pytest.mark.gate(equations=["hc.eq2", "hc.eq5", "hc.eq9", "hc.eq10", "hc.eq11"], mechanism="hyper_connection",
                  gate_class="train_eval")
@pytest.mark.parametrize("dynamic", [True, False], ids=["dynamic", "static"])
def test_the_hyper_connection_gives_the_same_bits_in_eval_mode(subject, device, dynamic):
    fixture_id = "hc.module_dynamic" if dynamic else "hc.module_static"
    module, H, body = hc_module_at_fixture(subject, fixture_id, dynamic, torch.float32, device)
    assert_same_in_train_and_eval(lambda: module(H, body), modules={"module": module},
                                  what=f"one {'dynamic' if dynamic else 'static'} HC module at {fixture_id}'s point")


@pytest.mark.gate(equations=["attnres.eq5", "attnres.eq6", "attnres.alg1"], mechanism="block_attnres",
                  gate_class="train_eval")
@pytest.mark.parametrize("mode", ["direct", "two_phase"])
def test_the_block_attnres_module_gives_the_same_bits_in_eval_mode(subject, device, mode):
    module, leaves = seeded_block_module(subject, device, mode, learned_gain=False, backward="autograd", L=5, N=2, D=4,
                                         gradient=False)
    h1 = leaves["h1"].detach()
    assert_same_in_train_and_eval(lambda: module(h1), modules={"module": module},
                                  what=f"one Block AttnRes module ({mode}) with seeded pseudo-queries")


@pytest.mark.gate(equations=["attnres.placement_loop", "mhc.eq3", "hc.eq5"], mechanism="loop_model",
                  gate_class="train_eval")
@pytest.mark.parametrize("graph", list(GRAPHS))
def test_the_loop_model_gives_the_same_logits_in_eval_mode(subject, device, graph):
    model, toks = build(subject, device, **GRAPHS[graph]), tokens(device)
    # off its init, as a trained model is: at init the mHC arm's H_res is already a fixed point of one
    # Sinkhorn step and the HC arm's dynamic part is zero, so an eval path dropping either reads the same
    g = torch.Generator().manual_seed(4301)
    with torch.no_grad():
        for p in model.parameters():
            p.add_((0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64)).to(p))
    assert_same_in_train_and_eval(lambda: tuple(model(toks)), modules={"model": model},
                                  what=f"the {graph} graph of the loop model")
