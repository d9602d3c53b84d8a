"""The attn-res adapter: its AttnResOperator and its Block / Full schedule behind our interfaces."""
import pytest
import torch

from fidelity.adapters import attn_res
from fidelity.impl.torch import BlockAttnRes, depth_attend
from fidelity.subjects.subject import NotRun


def require(subject):
    """Skip the calling test, with the subject's own reason, when its package is not installed here."""
    reason = subject.unavailable_reason()
    if reason is not None:
        pytest.skip(f"subject {subject.name} not run: {reason}")
    return subject


def test_depth_attention_matches_the_reference_paper_convention_and_keeps_gradients():
    fn = require(attn_res.SUBJECT).get("depth_attention")
    g = torch.Generator().manual_seed(3)
    sources = torch.randn(4, 2, 3, 5, generator=g).requires_grad_(True)
    query = torch.randn(5, generator=g).requires_grad_(True)
    h, alpha = fn(sources, query, eps=1e-6)
    h_ref, alpha_ref = depth_attend(sources, query, eps=1e-6)
    assert h.shape == (2, 3, 5) and alpha.shape == (4, 2, 3)
    torch.testing.assert_close(h, h_ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(alpha, alpha_ref, rtol=1e-5, atol=1e-6)
    dq, = torch.autograd.grad(h.sum() + alpha[0].sum(), query)  # gradients reach the caller's own query
    assert torch.isfinite(dq).all() and dq.abs().max() > 0


@pytest.mark.parametrize("kwargs, match", [
    ({"convention": "l2"}, "'paper' convention"),
    ({"gain": torch.ones(5)}, "no gain"),
    ({"backward": "manual"}, "no hand-written backward"),
])
def test_depth_attention_refuses_what_the_package_lacks(kwargs, match):
    fn = require(attn_res.SUBJECT).get("depth_attention")
    with pytest.raises(NotRun, match=match):
        fn(torch.randn(3, 5), torch.randn(5), **kwargs)
    with pytest.raises(NotRun, match="only float32"):
        fn(torch.randn(3, 5, dtype=torch.float64), torch.randn(5, dtype=torch.float64))


@pytest.mark.parametrize("L, N", [(6, 2), (4, 4)])
def test_block_schedule_matches_the_reference_when_blocks_divide_evenly(L, N):
    factory = require(attn_res.SUBJECT).get("block_attnres")
    d = 5
    g = torch.Generator().manual_seed(11)
    weights = [torch.randn(d, d, generator=g) / d ** 0.5 for _ in range(L)]
    seen = {"pkg": [], "ref": []}

    def sublayers(tag):
        return [lambda h, W=W: seen[tag].append(h.detach()) or torch.tanh(h @ W.T) for W in weights]

    pkg, ref = factory(sublayers("pkg"), d, N), BlockAttnRes(sublayers("ref"), d, N)
    assert [name for name, _ in pkg.named_parameters()] == ["queries"]
    assert torch.equal(pkg.queries.detach(), torch.zeros(L, d)), "the package's own init: zero pseudo-queries"
    with torch.no_grad():
        q = torch.randn(L, d, generator=g)
        pkg.queries.copy_(q)
        ref.queries.copy_(q)
    h1 = torch.randn(2, 3, d, generator=g)
    out = pkg(h1)
    ref(h1)
    assert out.shape == h1.shape
    # every sublayer received the same h_l (Eq. 6 sources, one softmax); the outputs differ by design
    torch.testing.assert_close(torch.stack(seen["pkg"]), torch.stack(seen["ref"]), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    assert pkg.queries.grad is not None and pkg.queries.grad.abs().max() > 0


def test_block_refuses_two_phase_and_float64():
    factory = require(attn_res.SUBJECT).get("block_attnres")
    subs = [torch.tanh] * 4
    with pytest.raises(NotRun, match="two-phase"):
        factory(subs, 4, 2, mode="two_phase")
    with pytest.raises(NotRun, match="two-phase"):
        factory(subs, 4, 2)(torch.randn(4), mode="two_phase")
    with pytest.raises(NotRun, match="only float32"):
        factory(subs, 4, 2, dtype=torch.float64)
