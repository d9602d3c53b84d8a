"""The hyper-connections adapter: its Sinkhorn, its mHC and its HC modules behind our interfaces."""
import pytest
import torch

from fidelity.adapters import hyper_connections as hcx
from fidelity.impl.torch import HyperConnection, sinkhorn as reference
from fidelity.subjects.subject import NotRun


def require(subject):
    """Skip the calling test, with the subject's own reason, when its package is not installed here."""
    reason = subject.unavailable_reason()
    if reason is not None:
        pytest.skip(f"subject {subject.name} not run: {reason}")
    return subject


@pytest.mark.parametrize("subject", [hcx.SUBJECT, hcx.LOG_DOMAIN_SUBJECT], ids=lambda s: s.name)
def test_sinkhorn_is_eq9_in_float32_and_refuses_float64(subject):
    sk = require(subject).get("sinkhorn")
    logits = torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(sk(logits, t_max=20), reference(logits, t_max=20), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotRun, match="only float32"):
        sk(logits.double())
    with pytest.raises(NotRun, match="no hand-written backward"):
        sk(logits, backward="manual")


def _mhc(**kw):
    return require(hcx.SUBJECT).get("mhc_residual")(3, 4, **kw)


def test_mhc_parameter_map_reaches_the_package_and_eq3_holds_on_its_own_coefficients():
    m = _mhc()
    names = [n for n, _ in m.named_parameters()]
    assert names[:6] == ["b_pre", "b_res", "b_post", "alpha_pre", "alpha_post", "alpha_res"]
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        m.b_pre.copy_(torch.randn(3, generator=g))
        m.b_res.copy_(torch.randn(3, 3, generator=g))
        m.b_post.copy_(torch.randn(3, generator=g))
    # b_pre | b_res^T is the package's own static_alpha (a parametrization of our two leaves)
    assert torch.equal(m.pkg.static_alpha, torch.cat([m.b_pre[:, None], m.b_res.T], dim=1))
    x = torch.randn(2, 3, 4, generator=g)
    h_pre, h_post, h_res = m.coefficients(x)
    assert h_pre.shape == (2, 3) and h_post.shape == (2, 3) and h_res.shape == (2, 3, 3)
    torch.testing.assert_close(h_pre, torch.sigmoid(m.b_pre).expand(2, 3))  # phi = 0 at the package's init
    torch.testing.assert_close(h_post, 2 * torch.sigmoid(m.b_post).expand(2, 3))
    body = lambda u: torch.tanh(u) * 3  # noqa: E731
    out = m(x, body)
    u = (h_pre.unsqueeze(-1) * x).sum(-2)
    torch.testing.assert_close(out, h_res @ x + h_post.unsqueeze(-1) * body(u).unsqueeze(-2))
    out.sum().backward()
    for name in ("b_pre", "b_res", "b_post", "alpha_pre", "alpha_post", "alpha_res"):
        assert getattr(m, name).grad is not None, name
    assert torch.equal(m.readout(m.expand(x[:, 0])), 3 * x[:, 0])


def test_mhc_refuses_what_the_package_cannot_express():
    m = _mhc()
    with pytest.raises(NotRun, match="phi_res"):
        m.phi_res
    with pytest.raises(NotRun, match="sliced"):
        _mhc(layout="sliced")
    with pytest.raises(NotRun, match="only float32"):
        _mhc(dtype=torch.float64)
    with pytest.raises(NotRun, match="no hand-written backward"):
        _mhc(sinkhorn_backward="manual")


def test_hc_at_init_equals_the_reference_and_maps_its_parameters():
    factory = require(hcx.SUBJECT).get("hyper_connection")
    m = factory(3, 4, 1, dtype=torch.float64)
    ref = HyperConnection(3, 4, 1, dtype=torch.float64)
    assert m.alpha_scale is m.pkg.dynamic_alpha_scale and m.static_alpha is m.pkg.static_alpha
    torch.testing.assert_close(m.static_alpha, ref.static_alpha)  # Eq. 14 init: A_m = e_{k mod n}, A_r = I
    H = torch.randn(2, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    W = torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    body = lambda h: h @ W  # noqa: E731
    torch.testing.assert_close(m(H, body), ref(H, body))  # dynamic weights are zero: the norm plays no part
    alpha, beta = m.connections(H)
    assert alpha.shape == (2, 3, 4) and beta.shape == (2, 3)
    with pytest.raises(NotRun, match="no static mode"):
        factory(3, 4, 1, dynamic=False)
    with pytest.raises(NotRun, match="RMSNorm"):
        m.layer_norm


def test_mhc_h_res_is_the_matrix_that_multiplies_the_streams_and_is_the_row_first_iterate():
    """The docstring's mapping, pinned: the package mixes out[t] = sum_s A[s, t] x[s], so H_res = A^T, and
    A = sinkhorn(b_res^T) makes H_res the ROW-first iterate of b_res (a finding about the package, reported,
    not corrected). On the slow 2x2 case the two orders differ visibly at t_max = 20."""
    m = require(hcx.SUBJECT).get("mhc_residual")(2, 3)
    b = torch.tensor([[0.0, 0.0], [-12.0, 0.0]])
    with torch.no_grad():
        m.b_res.copy_(b)
    x = torch.randn(4, 2, 3, generator=torch.Generator().manual_seed(9))
    _, _, h_res = m.coefficients(x)
    torch.testing.assert_close(h_res[0], reference(b.T).T)          # row first, then column
    assert (h_res[0] - reference(b)).abs().max() > 1e-2              # Eq. 9 (column first) is not what it computes
    torch.testing.assert_close(h_res[0].sum(-2), torch.ones(2))      # its last pass normalises columns
