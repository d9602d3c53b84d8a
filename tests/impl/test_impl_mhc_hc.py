"""Smoke tests: mHC residual and Hyper-Connections."""
import math

import pytest
import torch

from fidelity.impl.torch import HyperConnection, MhcResidual


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("n", [0, -1])
def test_mhc_refuses_fewer_than_one_stream(n):
    with pytest.raises(ValueError, match="n must be >= 1"):
        MhcResidual(n, 4, generator=_gen())


def test_mhc_parameter_names_shapes_and_init():
    m = MhcResidual(3, 4, generator=_gen())
    shapes = {name: tuple(p.shape) for name, p in m.named_parameters()}
    assert shapes == {
        "phi_pre": (12, 3), "phi_post": (12, 3), "phi_res": (12, 9),
        "alpha_pre": (), "alpha_post": (), "alpha_res": (),
        "b_pre": (3,), "b_post": (3,), "b_res": (3, 3),
    }
    assert torch.equal(m.phi_res, torch.zeros(12, 9)) and m.alpha_res.item() == pytest.approx(0.01)
    assert torch.equal(m.b_res, 10.0 * torch.eye(3)) and torch.equal(m.b_post, torch.zeros(3))
    drawn = MhcResidual(3, 4, generator=_gen(1), dynamic_init_std=0.01)
    again = MhcResidual(3, 4, generator=_gen(1), dynamic_init_std=0.01)
    assert drawn.phi_pre.abs().max() > 0 and torch.equal(drawn.phi_res, again.phi_res)


@pytest.mark.parametrize("layout", ["paper", "sliced"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mhc_shapes_and_coefficients(layout, dtype):
    n, C = 2, 3
    m = MhcResidual(n, C, layout=layout, generator=_gen(), dtype=dtype, dynamic_init_std=0.5)
    width = C if layout == "paper" else n * C
    h = torch.randn(4, 5, width, generator=_gen(2), dtype=dtype)
    x = m.expand(h)
    assert x.shape == (4, 5, n, C)
    h_pre, h_post, h_res = m.coefficients(x)
    assert h_pre.shape == (4, 5, n) and h_post.shape == (4, 5, n) and h_res.shape == (4, 5, n, n)
    assert ((h_post > 0) & (h_post < 2)).all() and (h_res >= 0).all()
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert (h_res.sum(-1) - 1).abs().max() < tol
    body_width = []
    out = m(x, lambda u: body_width.append(u.shape[-1]) or torch.tanh(u))
    assert out.shape == x.shape and out.dtype == dtype
    assert body_width == [C if layout == "paper" else n * C]
    assert m.readout(out).shape == (4, 5, width)


def test_mhc_eq3_hand_fixture_sliced():
    """Record 004 §5.1: H_res = [[0.8, 0.2], [0.2, 0.8]], out = 8.95081338, 17.50162675, 51.65446857, 69.00595810."""
    m = MhcResidual(2, 2, layout="sliced", generator=_gen(), dtype=torch.float64)
    with torch.no_grad():
        for a in (m.alpha_pre, m.alpha_post, m.alpha_res):
            a.zero_()
        m.b_res.copy_(torch.tensor([[0.0, -math.log(4)], [-math.log(4), 0.0]]))
        m.b_post.copy_(torch.tensor([-0.5, 1.5]))
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    y = torch.tensor([10.0, 20.0, 30.0, 40.0], dtype=torch.float64)
    out = m(x, lambda hidden: y)
    expected = torch.tensor([[8.95081338, 17.50162675], [51.65446857, 69.00595810]], dtype=torch.float64)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-7)


def test_mhc_sliced_leaves_h_pre_unwired_paper_wires_it():
    x_h = torch.randn(3, 4, generator=_gen(3))
    sliced = MhcResidual(2, 2, layout="sliced", generator=_gen(), dynamic_init_std=0.1)
    sliced(sliced.expand(x_h), torch.tanh).pow(2).sum().backward()
    for name, p in sliced.named_parameters():
        if name in ("phi_pre", "alpha_pre", "b_pre"):
            assert p.grad is None, name
        else:
            assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().max() > 0, name
    paper = MhcResidual(2, 4, layout="paper", generator=_gen(), dynamic_init_std=0.1)
    # not expand(x_h): with replicated (equal) streams H_res x = x for any row-stochastic H_res, so
    # phi_res/alpha_res/b_res get a legitimately zero gradient; a non-constant state is needed
    x = torch.randn(3, 2, 4, generator=_gen(4))
    paper(x, torch.tanh).pow(2).sum().backward()
    for name, p in paper.named_parameters():
        assert p.grad is not None and p.grad.abs().max() > 0, name


def test_hc_static_init_and_forward():
    n, d = 3, 4
    hc = HyperConnection(n, d, layer_index=4, generator=_gen())
    assert torch.equal(hc.static_alpha[:, 0], torch.tensor([0.0, 1.0, 0.0]))  # e_{4 mod 3}
    assert torch.equal(hc.static_alpha[:, 1:], torch.eye(n)) and torch.equal(hc.static_beta, torch.ones(n))
    assert torch.equal(hc.dynamic_alpha_fn, torch.zeros(d, n + 1)) and hc.alpha_scale.item() == pytest.approx(0.01)
    H = torch.randn(2, 5, n, d, generator=_gen(4))
    out = hc(H, torch.tanh)
    assert out.shape == H.shape
    # at init the dynamic part is zero: out = 1 * T(H[1]) + H (Eq. 5 with Eq. 14)
    torch.testing.assert_close(out, torch.tanh(H[..., 1, :]).unsqueeze(-2) + H)
    assert hc.readout(out).shape == (2, 5, d) and hc.expand(H[..., 0, :]).shape == H.shape


@pytest.mark.parametrize("dynamic", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_hc_gradients_and_dtypes(dynamic, dtype):
    hc = HyperConnection(2, 4, 1, dynamic=dynamic, generator=_gen(), dtype=dtype)
    with torch.no_grad():
        if dynamic:
            hc.dynamic_alpha_fn.copy_(torch.randn(4, 3, generator=_gen(5), dtype=dtype))
            hc.dynamic_beta_fn.copy_(torch.randn(4, generator=_gen(6), dtype=dtype))
    H = torch.randn(3, 2, 4, generator=_gen(7), dtype=dtype)
    out = hc(H, torch.tanh)
    assert out.dtype == dtype
    out.pow(2).sum().backward()
    names = {name for name, _ in hc.named_parameters()}
    assert ("dynamic_alpha_fn" in names) == dynamic
    for name, p in hc.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_hc_refuses_zero_streams():
    with pytest.raises(ValueError):
        HyperConnection(0, 4, 0)


@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_mhc_eq3_stream_indexing_with_a_non_symmetric_h_res(layout):
    """out[j] = sum_i H_res[j, i] x[i] + H_post[j] y[j]; a symmetric H_res could not tell H_res from H_res^T."""
    n, C = 3, 2
    m = MhcResidual(n, C, layout=layout, generator=_gen(), dtype=torch.float64, dynamic_init_std=0.3)
    with torch.no_grad():
        m.b_res.copy_(torch.tensor([[2.0, 0.0, -1.0], [1.5, 0.5, 0.0], [-2.0, 1.0, 1.0]], dtype=torch.float64))
        m.b_post.copy_(torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64))
    x = torch.randn(4, n, C, generator=_gen(8), dtype=torch.float64)
    h_pre, h_post, h_res = m.coefficients(x)
    assert (h_res - h_res.transpose(-1, -2)).abs().max() > 0.1
    body = torch.sin
    if layout == "paper":
        y = body(torch.einsum("bi,bic->bc", h_pre, x)).unsqueeze(-2).expand_as(x)
    else:
        y = body(x.reshape(4, n * C)).reshape(x.shape)
    expected = torch.einsum("bji,bic->bjc", h_res, x) + h_post.unsqueeze(-1) * y
    torch.testing.assert_close(m(x, body), expected, rtol=1e-12, atol=1e-12)
