"""Gates (stateless by contract): depth attention and a reused Block AttnRes module give the same bits every call.

Issue 14: a stateful implementation (an iteration counter never reset, so a reused object
degrades) is caught only if an adapter happens to reuse the object; the other gates build a
fresh module, or make one call, per case. Here one function or one module is called with the
same arguments, twice and 1001 times (fidelity.gates.statelessness: every result must equal
the first bit for bit; the reading counts the calls that differ). The two-call instances include a
backward (gradients are results too: a counter in a hand-written backward is state as well).

Depth attention: sources [3, 2, 4], query and gain from a seeded generator, cotangents on h and
alpha; both dtypes for the two-call case, float32 alone for the 1001-call case (the Triton
interpreter takes ~4 ms a kernel call). The module: L = 5 tanh sublayers in N = 2 blocks,
seeded non-zero pseudo-queries, float32, both modes, 1001 calls.
"""
from __future__ import annotations

import pytest
import torch

from fidelity.gates.statelessness import REUSE_CALLS, assert_same_bits_every_call
from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS
from fidelity.subjects.subject import NotRun

ROUTES = ["autograd", "manual"]
MODES = ["direct", "two_phase"]
CALLS = [pytest.param(2, torch.float32, True, id="twice-f32"), pytest.param(2, torch.float64, True, id="twice-f64"),
         pytest.param(REUSE_CALLS, torch.float32, False, id=f"{REUSE_CALLS}_calls-f32")]
"""(calls, dtype, with a backward): the same call twice with its gradients, and REUSE_CALLS forwards (a
backward per call would double the cost of the long instance, ~4 ms a kernel call in the Triton interpreter;
state kept by a backward shows on its second call)."""
MODULE_CALLS = [pytest.param(2, True, id="twice"), pytest.param(REUSE_CALLS, False, id=f"{REUSE_CALLS}_calls")]


def _present(grads, leaves):
    """Gradients with None (a leaf the graph does not reach: the reach gates' business, not this one's) as zeros."""
    return [torch.zeros_like(t) if gr is None else gr for gr, t in zip(grads, leaves)]


def _seeded(*shape, g):
    return torch.randn(*shape, generator=g, dtype=torch.float64)


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4"], mechanism="depth_attention", gate_class="stateless")
@pytest.mark.parametrize("calls,dtype,with_backward", CALLS)
@pytest.mark.parametrize("backward", ROUTES)
def test_depth_attention_gives_the_same_bits_on_every_call(subject, device, backward, calls, dtype, with_backward):
    """The same depth-attention call (paper convention, a gain, eps 1e-6), `calls` times: h, alpha (and, in
    the two-call instances, the gradients for sources, query and gain) identical to the first call's, bit
    for bit."""
    if not subject.supports("depth_attention", backward):
        pytest.skip(f"subject {subject.name} has no {backward!r} backward route for depth_attention")
    fn = subject.get("depth_attention")
    g = torch.Generator().manual_seed(20261216)
    sources, query, gain = _seeded(3, 2, 4, g=g), _seeded(4, g=g), 1.0 + 0.5 * _seeded(4, g=g)
    dh, dalpha = _seeded(2, 4, g=g), _seeded(3, 2, g=g)
    leaves = [t.to(dtype=dtype, device=device).requires_grad_(True) for t in (sources, query, gain)]
    dh, dalpha = dh.to(dtype=dtype, device=device), dalpha.to(dtype=dtype, device=device)

    def call():
        with torch.enable_grad():
            h, alpha = fn(leaves[0], leaves[1], convention=SCORE_CONVENTIONS[0], eps=1e-6, gain=leaves[2],
                          backward=backward)
            if not with_backward:
                return h.detach(), alpha.detach()
            grads = torch.autograd.grad((h * dh).sum() + (alpha * dalpha).sum(), leaves, allow_unused=True)
        return (h.detach(), alpha.detach(), *_present(grads, leaves))

    assert_same_bits_every_call(call, calls=calls, what=f"depth attention ({backward}, {str(dtype)[6:]})")


def _tanh_sublayers(g: torch.Generator, count: int, d: int, dtype, device):
    layers = []
    for _ in range(count):
        W = (_seeded(d, d, g=g) / d ** 0.5).to(dtype=dtype, device=device)
        b = (0.5 * _seeded(d, g=g)).to(dtype=dtype, device=device)
        layers.append(lambda h, W=W, b=b: torch.tanh(h @ W.T + b))
    return layers


@pytest.mark.gate(equations=["attnres.eq5", "attnres.eq6", "attnres.alg1"], mechanism="block_attnres",
                  gate_class="stateless")
@pytest.mark.parametrize("calls,with_backward", MODULE_CALLS)
@pytest.mark.parametrize("mode", MODES)
def test_one_block_module_reused_gives_the_same_bits_on_every_call(subject, device, mode, calls, with_backward):
    """One module from the factory, reused: twice with a backward, and REUSE_CALLS forwards, of the same h1:
    h_out (and the gradients of h1 and the pseudo-queries) identical to the first call's, bit for bit."""
    L, N, d, dtype = 5, 2, 4, torch.float32
    g = torch.Generator().manual_seed(20261217)
    module = subject.get("block_attnres")(_tanh_sublayers(g, L, d, dtype, device), d, N, mode=mode, dtype=dtype,
                                          device=device)
    params = dict(module.named_parameters())
    for name in ("queries", "output_query"):
        if name not in params:
            raise NotRun(f"the module has no parameter {name!r} (the interface's pseudo-queries)")
        with torch.no_grad():
            params[name].copy_(_seeded(*params[name].shape, g=g).to(dtype=dtype, device=device))
    h1 = _seeded(2, d, g=g).to(dtype=dtype, device=device).requires_grad_(True)
    cot = _seeded(2, d, g=g).to(dtype=dtype, device=device)
    leaves = [h1, params["queries"], params["output_query"]]

    def call():
        with torch.enable_grad():
            out = module(h1)
            if not with_backward:
                return (out.detach(),)
            grads = torch.autograd.grad((out * cot).sum(), leaves, allow_unused=True)
        return (out.detach(), *_present(grads, leaves))

    assert_same_bits_every_call(call, calls=calls, what=f"one Block AttnRes module reused ({mode})")
