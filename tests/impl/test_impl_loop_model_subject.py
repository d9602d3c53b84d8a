"""Smoke tests: the loop model, its config refusals, and the torch subject."""
import pytest
import torch

from fidelity.impl.torch import LoopConfig, LoopModel
from fidelity.mechanisms import NotRun, known_mechanisms
from fidelity.subjects.torch_reference import SUBJECT


def _model(seed=0, dtype=torch.float32, **cfg):
    return LoopModel(LoopConfig(**cfg), torch.Generator().manual_seed(seed), dtype=dtype)


def _tokens():
    return torch.randint(0, 16, (2, 5), generator=torch.Generator().manual_seed(99))


@pytest.mark.parametrize("arms", [("mhc", "attnres"), ("rezero", "hc"), ()])
def test_config_refuses_anything_but_one_arm(arms):
    with pytest.raises(ValueError, match="exactly one residual arm"):
        LoopConfig(arm=arms)


def test_config_refuses_zero_mhc_streams_and_unknown_arm():
    with pytest.raises(ValueError, match="mhc_streams must be >= 1"):
        LoopConfig(arm="mhc", mhc_streams=0)
    with pytest.raises(ValueError):
        LoopConfig(arm="gr")
    with pytest.raises(ValueError):
        LoopConfig(d=8, mhc_streams=3)  # sliced layout needs d divisible by n
    with pytest.raises(ValueError, match="as a string"):  # the interface's arm is a str: a sequence is refused
        LoopConfig(arm=("attnres",))


@pytest.mark.parametrize("arm", ["rezero", "attnres", "mhc", "hc"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_every_arm_reads_out_every_iteration(arm, dtype):
    model = _model(arm=arm, dtype=dtype)
    logits = model(_tokens())
    assert len(logits) == 3 and all(t.shape == (2, 5, 16) and t.dtype == dtype for t in logits)
    sum(t.pow(2).sum() for t in logits).backward()
    assert model.body_w1.grad is not None and model.body_w1.grad.abs().max() > 0
    assert (model.residual_scale.grad is not None) == (arm == "rezero")


def test_mhc_paper_layout_runs():
    logits = _model(arm="mhc", mhc_layout="paper", mhc_streams=2)(_tokens())
    assert len(logits) == 3 and logits[-1].shape == (2, 5, 16)


def test_construction_leaves_the_global_rng_alone_and_is_reproducible():
    state = torch.get_rng_state()
    a, b = _model(seed=3, arm="mhc", mhc_dynamic_init_std=0.01), _model(seed=3, arm="mhc", mhc_dynamic_init_std=0.01)
    assert torch.equal(torch.get_rng_state(), state)
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), name
    with pytest.raises(TypeError):
        LoopModel(LoopConfig(), None)


def test_attnres_init_is_an_equal_weight_average():
    model = _model(arm="attnres")
    tokens = _tokens()
    _, trace = model(tokens, return_trace=True)
    h0 = model.embed[tokens]
    torch.testing.assert_close(trace[0]["state"], (h0 + trace[0]["y"]) / 2)
    torch.testing.assert_close(trace[1]["state"], (h0 + trace[0]["y"] + trace[1]["y"]) / 3)


def test_set_arm_shares_weights_and_mhc_at_init_is_near_rezero():
    model = _model(arm="rezero", dtype=torch.float64)
    tokens = _tokens()
    rezero = model(tokens)
    model.set_arm("mhc")
    assert model.arm == "mhc"
    mhc = model(tokens)
    rel = max(((a - b).norm() / b.norm()).item() for a, b in zip(mhc, rezero))
    assert 0 < rel < 1e-2  # H_res ~ I, H_post = 1 at init: h_ctx + y, up to e^-10 terms
    with pytest.raises(ValueError):
        model.set_arm("gr")


def test_composite_h_res_is_the_power():
    model = _model(arm="mhc", dtype=torch.float64)
    with torch.no_grad():
        model.mhc.b_res.copy_(torch.tensor([[1.0, 0.3], [-0.2, 0.5]], dtype=torch.float64))
    h = torch.randn(4, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    _, _, h_res = model.mhc.coefficients(model.mhc.expand(h))
    composite = model.composite_h_res(h, T=3)
    torch.testing.assert_close(composite, h_res @ h_res @ h_res)
    assert (composite.sum(-1) - 1).abs().max() < 1e-12


def test_subject_covers_every_mechanism():
    assert SUBJECT.name == "torch" and SUBJECT.unavailable_reason() is None and SUBJECT.available()
    assert set(SUBJECT.mechanisms) == set(known_mechanisms())
    assert SUBJECT.capabilities["depth_attention"].backward == ("autograd", "manual")
    assert SUBJECT.capabilities["sinkhorn"].backward == ("autograd", "manual")
    assert SUBJECT.supports("sinkhorn", "manual") and not SUBJECT.supports("loop_model", "manual")
    with pytest.raises(NotRun):
        SUBJECT.get("nonexistent")
