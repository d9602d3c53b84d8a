"""The POT adapter: Eq. 9 through ot.sinkhorn(method="sinkhorn_log") with a = b = 1, M = -logits, reg = 1."""
import pytest
import torch

from fidelity.adapters import pot
from fidelity.impl.torch import sinkhorn as reference
from fidelity.subjects.subject import NotRun


def require(subject):
    """Skip the calling test, with the subject's own reason, when its package is not installed here."""
    reason = subject.unavailable_reason()
    if reason is not None:
        pytest.skip(f"subject {subject.name} not run: {reason}")
    return subject


def test_pot_is_eq9_column_then_row_in_float64_batched():
    sk = require(pot.SUBJECT).get("sinkhorn")
    logits = torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(7), dtype=torch.float64) * 3
    for t in (1, 2, 5, 20):
        got = sk(logits, t_max=t)
        assert got.shape == logits.shape and got.dtype == torch.float64
        # POT's potentials give exactly Eq. 9's iterate in exact arithmetic; only rounding differs
        torch.testing.assert_close(got, reference(logits, t_max=t), rtol=1e-12, atol=0)
    assert torch.equal(sk(logits, t_max=0), torch.exp(logits)), "t_max = 0 runs no iteration: M(0) = exp(logits)"


def test_pot_runs_float32_natively_and_carries_autograd():
    sk = require(pot.SUBJECT).get("sinkhorn")
    logits = torch.randn(3, 3, generator=torch.Generator().manual_seed(1)).requires_grad_(True)
    out = sk(logits)
    assert out.dtype == torch.float32
    (out * torch.arange(9.0).reshape(3, 3)).sum().backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all() and logits.grad.abs().max() > 0


def test_pot_has_no_manual_backward():
    sk = require(pot.SUBJECT).get("sinkhorn")
    with pytest.raises(NotRun, match="no hand-written backward"):
        sk(torch.zeros(2, 2), backward="manual")
