"""Smoke tests: log-domain Sinkhorn-Knopp (mHC Eq. 9)."""
import pytest
import torch

from fidelity.impl.torch import sinkhorn


def _logits(n, batch=(), scale=2.0, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*batch, n, n, generator=g, dtype=dtype) * scale


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("route", ["autograd", "manual"])
def test_rows_sum_to_one_and_nonnegative(dtype, route):
    M = sinkhorn(_logits(4, (2, 3), dtype=dtype), backward=route)
    assert M.shape == (2, 3, 4, 4) and M.dtype == dtype
    assert (M >= 0).all()
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert (M.sum(-1) - 1).abs().max() < tol  # the last step of Eq. 9 is a row pass
    assert (M.sum(-2) - 1).abs().max() < 0.1  # columns: the unconverged direction


def test_large_logits_stay_finite():
    x = _logits(4, dtype=torch.float32, scale=200.0)
    M = sinkhorn(x)
    assert torch.isfinite(M).all()
    assert (M.sum(-1) - 1).abs().max() < 1e-5


def test_identity_at_static_init():
    M = sinkhorn(10.0 * torch.eye(4, dtype=torch.float64))
    assert (M - torch.eye(4, dtype=torch.float64)).abs().max() < 3 * 4.6e-5  # (n - 1) e^-10 off the diagonal


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_manual_backward_gradcheck(n):
    x = _logits(n, scale=1.0, seed=n).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: sinkhorn(t, t_max=20, backward="manual"), (x,), eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_manual_backward_matches_autograd(n):
    x = _logits(n, (3,), seed=10 + n)
    w = torch.randn(3, n, n, generator=torch.Generator().manual_seed(n), dtype=torch.float64)
    grads = []
    for route in ("autograd", "manual"):
        leaf = x.clone().requires_grad_()
        (sinkhorn(leaf, backward=route) * w).sum().backward()
        grads.append(leaf.grad)
    assert grads[0].abs().max() > 0
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-9, atol=1e-12)


def test_refuses_bad_arguments():
    with pytest.raises(ValueError):
        sinkhorn(torch.zeros(2, 3))
    with pytest.raises(ValueError):
        sinkhorn(torch.zeros(2, 2), backward="fused")
