"""Smoke tests: RMSNorm and AttnRes depth attention (shapes, dtypes, manual backward vs autograd)."""
import math

import pytest
import torch

from fidelity.impl.torch import DepthAttention, RMSNorm, depth_attend, rms_norm

CONVENTIONS = ("paper", "l2_sqrt_d", "l2")


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rms_norm_mean_form(dtype):
    x = torch.randn(3, 5, 7, generator=_gen(), dtype=dtype)
    gain = torch.randn(7, generator=_gen(1), dtype=dtype)
    eps = 1e-6
    expected = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * gain
    torch.testing.assert_close(rms_norm(x, eps, gain), expected)
    module = RMSNorm(7, eps, dtype=dtype)
    assert module.gain.dtype == dtype and torch.equal(module.gain, torch.ones(7, dtype=dtype))
    assert module(x).shape == x.shape and module(x).dtype == dtype


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_depth_attend_shapes_and_formula(convention, dtype):
    L, B, T, d = 4, 2, 3, 6
    g = _gen(2)
    sources = torch.randn(L, B, T, d, generator=g, dtype=dtype)
    query = torch.randn(d, generator=g, dtype=dtype)
    gain = torch.rand(d, generator=g, dtype=dtype) + 0.5
    eps = 1e-6
    h, alpha = depth_attend(sources, query, convention=convention, eps=eps, gain=gain)
    assert h.shape == (B, T, d) and alpha.shape == (L, B, T)
    assert h.dtype == dtype and alpha.dtype == dtype
    torch.testing.assert_close(alpha.sum(0), torch.ones(B, T, dtype=dtype))
    # the convention's own words, written independently of (m, scale)
    ss = (sources * sources).sum(-1)
    if convention == "paper":
        s = (query * gain * sources).sum(-1) / torch.sqrt(ss / d + eps)
    elif convention == "l2_sqrt_d":
        s = (query * gain * sources).sum(-1) / torch.sqrt(ss + eps) / math.sqrt(d)
    else:
        s = (query * gain * sources).sum(-1) / torch.sqrt(ss + eps)
    a = torch.softmax(s, 0)
    torch.testing.assert_close(alpha, a)
    torch.testing.assert_close(h, (a[..., None] * sources).sum(0))


def test_zero_query_gives_uniform_average():
    sources = torch.randn(3, 2, 4, generator=_gen(3), dtype=torch.float64)
    module = DepthAttention(4, dtype=torch.float64)
    assert torch.equal(module.query, torch.zeros(4, dtype=torch.float64))
    h, alpha = module(sources)
    torch.testing.assert_close(alpha, torch.full((3, 2), 1 / 3, dtype=torch.float64))
    torch.testing.assert_close(h, sources.mean(0))


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("with_gain", [False, True])
def test_manual_backward_gradcheck(convention, with_gain):
    g = _gen(4)
    L, B, d = 3, 2, 5
    sources = (torch.randn(L, B, d, generator=g, dtype=torch.float64) * 1.5).requires_grad_()
    query = torch.randn(d, generator=g, dtype=torch.float64).requires_grad_()
    gain = (torch.rand(d, generator=g, dtype=torch.float64) + 0.5).requires_grad_() if with_gain else None
    inputs = (sources, query) + ((gain,) if with_gain else ())

    def f(*args):
        return depth_attend(
            args[0], args[1], convention=convention, eps=1e-3, gain=args[2] if with_gain else None, backward="manual"
        )

    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_manual_backward_matches_autograd(convention):
    g = _gen(5)
    sources = torch.randn(4, 2, 3, 8, generator=g, dtype=torch.float64)
    query = torch.randn(8, generator=g, dtype=torch.float64)
    gain = torch.rand(8, generator=g, dtype=torch.float64) + 0.5
    w_h = torch.randn(2, 3, 8, generator=g, dtype=torch.float64)
    w_a = torch.randn(4, 2, 3, generator=g, dtype=torch.float64)
    grads = {}
    for route in ("autograd", "manual"):
        leaves = [t.clone().requires_grad_() for t in (sources, query, gain)]
        h, alpha = depth_attend(leaves[0], leaves[1], convention=convention, eps=1e-6, gain=leaves[2], backward=route)
        ((h * w_h).sum() + (alpha * w_a).sum()).backward()
        grads[route] = [t.grad for t in leaves]
    for a, m in zip(grads["autograd"], grads["manual"]):
        assert a.abs().max() > 0
        torch.testing.assert_close(m, a, rtol=1e-10, atol=1e-12)


def test_manual_route_without_gain_returns_no_gain_gradient():
    sources = torch.randn(3, 4, generator=_gen(6), dtype=torch.float64, requires_grad=True)
    query = torch.randn(4, generator=_gen(7), dtype=torch.float64, requires_grad=True)
    h, _ = depth_attend(sources, query, backward="manual")
    h.sum().backward()
    assert sources.grad is not None and query.grad is not None


def test_depth_attend_refuses_bad_arguments():
    sources = torch.randn(3, 4)
    with pytest.raises(ValueError):
        depth_attend(sources, torch.zeros(4), convention="sqrt")
    with pytest.raises(ValueError):
        depth_attend(sources, torch.zeros(4), backward="fused")
    with pytest.raises(ValueError):
        depth_attend(sources, torch.zeros(5))
    with pytest.raises(TypeError):
        depth_attend(sources, torch.zeros(4, dtype=torch.float64))
