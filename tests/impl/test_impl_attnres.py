"""Smoke tests: Full / Block AttnRes (Eqs. 5-6, Alg. 1)."""
import pytest
import torch
from torch import nn

from fidelity.impl.torch import BlockAttnRes


class Sublayer(nn.Module):
    """A non-linear width-d sublayer with fixed weights drawn from a generator."""

    def __init__(self, d, generator, dtype):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d, generator=generator, dtype=dtype) / d ** 0.5)

    def forward(self, h):
        return torch.tanh(h @ self.w)


def _model(L, N, d=6, dtype=torch.float64, seed=0, random_queries=True, **kw):
    g = torch.Generator().manual_seed(seed)
    model = BlockAttnRes([Sublayer(d, g, dtype) for _ in range(L)], d, N, dtype=dtype, **kw)
    if random_queries:
        with torch.no_grad():
            model.queries.copy_(torch.randn(L, d, generator=g, dtype=dtype) * 2.0)
            model.output_query.copy_(torch.randn(d, generator=g, dtype=dtype))
    h1 = torch.randn(2, 3, d, generator=g, dtype=dtype)
    return model, h1


@pytest.mark.parametrize("L,N", [(6, 2), (6, 3), (5, 2), (7, 3), (4, 4), (4, 1)])
@pytest.mark.parametrize("convention", ["paper", "l2_sqrt_d", "l2"])
def test_two_phase_equals_direct_at_every_step(L, N, convention):
    model, h1 = _model(L, N, convention=convention)
    out_d, trace_d = model(h1, mode="direct", return_trace=True)
    out_t, trace_t = model(h1, mode="two_phase", return_trace=True)
    assert len(trace_d) == len(trace_t) == L
    for a, b in zip(trace_d, trace_t):
        assert a["sources"] == b["sources"]
        torch.testing.assert_close(b["h"], a["h"], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(b["alpha"], a["alpha"], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out_t, out_d, rtol=1e-12, atol=1e-12)


def test_source_sets_follow_eq6():
    model, h1 = _model(6, 3)  # S = 2: blocks {1,2}, {3,4}, {5,6}
    _, trace = model(h1, return_trace=True)
    assert [t["sources"] for t in trace] == [
        ["b0"],
        ["b0", "b1^1"],
        ["b0", "b1"],
        ["b0", "b1", "b2^1"],
        ["b0", "b1", "b2"],
        ["b0", "b1", "b2", "b3^1"],
    ]
    assert [(t["block"], t["position"]) for t in trace] == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)]


def test_remainder_block_and_full_mode():
    model, h1 = _model(5, 2)  # S = 3: blocks of 3 and 2
    assert model.blocks == [[0, 1, 2], [3, 4]]
    full, _ = _model(3, 3)
    _, trace = full(h1[..., :6], return_trace=True)
    assert [t["sources"] for t in trace] == [["b0"], ["b0", "b1"], ["b0", "b1", "b2"]]


def test_zero_queries_give_uniform_mixtures():
    model, h1 = _model(4, 2, random_queries=False)
    assert torch.equal(model.queries, torch.zeros_like(model.queries))
    _, trace = model(h1, return_trace=True)
    second = trace[1]  # layer 2 of block 1: a softmax mixture of b_0 and b_1^1, not b_0 + f_1
    torch.testing.assert_close(second["h"], (h1 + trace[0]["y"]) / 2)


def test_gradients_reach_queries_and_sublayers():
    model, h1 = _model(6, 2)
    for mode in ("direct", "two_phase"):
        model.zero_grad()
        model(h1, mode=mode).pow(2).sum().backward()
        grad = model.queries.grad
        # layer 1 attends b_0 alone: a softmax over one source has no query gradient; every other w_l has one
        assert torch.equal(grad[0], torch.zeros_like(grad[0]))
        assert grad[1:].abs().amax(dim=-1).min() > 0
        for p in model.sublayer_modules.parameters():
            assert p.grad is not None and p.grad.abs().max() > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_learned_gain_and_dtypes(dtype):
    model, h1 = _model(4, 2, dtype=dtype, learned_gain=True)
    assert model.gains.shape == (4, 6)
    out = model(h1, mode="two_phase")
    assert out.shape == h1.shape and out.dtype == dtype
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(out, model(h1, mode="direct"), rtol=tol, atol=tol)


def test_refuses_bad_block_counts():
    g = torch.Generator().manual_seed(0)
    layers = [Sublayer(4, g, torch.float32) for _ in range(5)]
    with pytest.raises(ValueError):
        BlockAttnRes(layers, 4, 0)
    with pytest.raises(ValueError):
        BlockAttnRes(layers, 4, 6)
    with pytest.raises(ValueError):
        BlockAttnRes(layers, 4, 4)  # ceil(5/4) = 2 gives 3 blocks, not 4
    with pytest.raises(ValueError):
        BlockAttnRes(layers, 4, 2, mode="fused")
