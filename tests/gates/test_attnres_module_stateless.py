"""Gates (stateless by contract): depth attention and a reused Block AttnRes module keep no state between calls.

Issue 14: a stateful implementation (an iteration counter never reset, so a reused object
degrades) is caught only if an adapter happens to reuse the object; the other gates build a
fresh module, or make one call, per case. Issue 50: state is read, not waited for. Here one function
or one module is called on inputs A, then on inputs B (other seeded values, the same shapes and
dtypes), then on A again (fidelity.gates.statelessness): both A results must agree bit for bit, B
must not get A's, B must give what B gives on a fresh object (a module built alike by the factory;
for the function, the function before this gate's other calls), and the state the call can touch
(the module's parameters, buffers and attributes and whatever objects it holds, the subject's
callable and the globals it names, the implementation modules, the global RNGs) must be what it was
before the first call, so a counter that would act only at its 500th call is seen on the first. State
the subject declares it keeps (Capability.keeps_state) is not counted, and the gate says what it was
told. The reading counts the outputs and state entries that differ. Each case runs with the forward
alone and with a backward (gradients are results too: a counter in a hand-written backward is state
as well).

Depth attention: sources [3, 2, 4], query and gain from a seeded generator, cotangents on h and
alpha; both dtypes. The module: L = 5 tanh sublayers in N = 2 blocks, every parameter it holds (by
named_parameters(), so any package's names) at seeded non-zero values, float32, both modes, with the
cotangent on h_out for the backward.
"""
from __future__ import annotations

import pytest
import torch

from fidelity.gates.optional_inputs import optional_input
from fidelity.gates.routes import require_gradient, routed
from fidelity.gates.statelessness import assert_stateless, built_twice, declared_kept_state
from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS

STATE = "attnres.stateless"  # a difference is state kept between calls: listed under its cause
ROUTES = ["autograd", "manual"]
MODES = ["direct", "two_phase"]
DTYPES = [pytest.param(torch.float32, id="f32"), pytest.param(torch.float64, id="f64")]
WITH_BACKWARD = [pytest.param(False, id="forward"), pytest.param(True, id="with_backward")]
SEED_A, SEED_B = 20261216, 20261218


def _present(grads, leaves):
    """Gradients with None (a leaf the graph does not reach: the reach gates' business, not this one's) as zeros."""
    return [torch.zeros_like(t) if gr is None else gr for gr, t in zip(grads, leaves)]


def _seeded(*shape, g):
    return torch.randn(*shape, generator=g, dtype=torch.float64)


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4", STATE], mechanism="depth_attention", gate_class="stateless")
@pytest.mark.parametrize("with_backward", WITH_BACKWARD)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backward", ROUTES)
def test_depth_attention_gives_the_same_bits_on_every_call(subject, device, backward, dtype, with_backward):
    """The same depth-attention call (paper convention, a gain unless the subject lacks one, eps 1e-6) on inputs
    A, B, A: h, alpha (and the gradients for sources, query and gain) of both A calls identical, bit for bit,
    and no state changed."""
    fn = routed(subject, "depth_attention", backward, gradient=with_backward)

    def call_on(seed):
        g = torch.Generator().manual_seed(seed)
        sources, query, gain = _seeded(3, 2, 4, g=g), _seeded(4, g=g), 1.0 + 0.5 * _seeded(4, g=g)
        dh, dalpha = _seeded(2, 4, g=g), _seeded(3, 2, g=g)
        leaves = [t.to(dtype=dtype, device=device).requires_grad_(with_backward) for t in (sources, query, gain)]
        dh, dalpha = dh.to(dtype=dtype, device=device), dalpha.to(dtype=dtype, device=device)

        def call():
            with torch.enable_grad():
                h, alpha = fn(leaves[0], leaves[1], convention=SCORE_CONVENTIONS[0], eps=1e-6,
                              gain=optional_input(subject, "depth_attention", "gain", leaves[2]))
                if not with_backward:
                    return {"h": h, "alpha": alpha}
                grads = torch.autograd.grad((h * dh).sum() + (alpha * dalpha).sum(), leaves, allow_unused=True)
            return {"h": h, "alpha": alpha, **dict(zip(("d sources", "d query", "d gain"), _present(grads, leaves)))}
        return call

    other = call_on(SEED_B)
    assert_stateless(call_on(SEED_A), other, fresh_other=other, objects={"depth_attention": fn},
                     implementation=subject.modules.get("depth_attention", ()),
                     kept=declared_kept_state(subject, "depth_attention"),
                     cause=[STATE], what=f"depth attention ({backward}, {str(dtype)[6:]}, "
                          f"{'with' if with_backward else 'without'} a backward)")


def _tanh_sublayers(g: torch.Generator, count: int, d: int, dtype, device):
    layers = []
    for _ in range(count):
        W = (_seeded(d, d, g=g) / d ** 0.5).to(dtype=dtype, device=device)
        b = (0.5 * _seeded(d, g=g)).to(dtype=dtype, device=device)
        layers.append(lambda h, W=W, b=b: torch.tanh(h @ W.T + b))
    return layers


def _seeded_module(subject, mode: str, d: int, dtype, device):
    """The factory's module over L = 5 tanh sublayers in N = 2 blocks, every parameter at seeded values."""
    L, N = 5, 2
    g = torch.Generator().manual_seed(20261217)
    module = subject.get("block_attnres")(_tanh_sublayers(g, L, d, dtype, device), d, N, mode=mode, dtype=dtype,
                                          device=device)
    for p in module.parameters():
        with torch.no_grad():
            p.copy_(_seeded(*p.shape, g=g).to(dtype=p.dtype, device=p.device))
    return module


@pytest.mark.gate(equations=["attnres.eq5", "attnres.eq6", "attnres.alg1", STATE], mechanism="block_attnres",
                  gate_class="stateless")
@pytest.mark.parametrize("with_backward", WITH_BACKWARD)
@pytest.mark.parametrize("mode", MODES)
def test_one_block_module_reused_gives_the_same_bits_on_every_call(subject, device, mode, with_backward):
    """One module from the factory, called on h1 of A, of B, of A again: h_out (and the gradients of h1 and
    every parameter) of both A calls identical, bit for bit, B's what B gives on a fresh module built alike,
    and no state of the module or the implementation changed by any call. Every parameter the module holds,
    whatever a package names it, is moved to seeded values first (at zero queries every score is 0, and a
    state that scales the scores is hidden)."""
    if with_backward:
        require_gradient(subject, "block_attnres")
    d, dtype = 4, torch.float32
    module, fresh = built_twice(lambda: _seeded_module(subject, mode, d, dtype, device))

    def call_on(seed, module=module):
        g = torch.Generator().manual_seed(seed)
        h1 = _seeded(2, d, g=g).to(dtype=dtype, device=device).requires_grad_(True)
        cot = _seeded(2, d, g=g).to(dtype=dtype, device=device)
        params = dict(module.named_parameters())
        leaves = [h1, *params.values()]

        def call():
            with torch.enable_grad():
                out = module(h1)
                if not with_backward:
                    return {"h_out": out}
                grads = torch.autograd.grad((out * cot).sum(), leaves, allow_unused=True)
            return {"h_out": out, **dict(zip(["d h1", *(f"d {name}" for name in params)], _present(grads, leaves)))}
        return call

    assert_stateless(call_on(SEED_A), call_on(SEED_B), fresh_other=call_on(SEED_B, fresh), modules={"module": module},
                     implementation=subject.modules.get("block_attnres", ()),
                     kept=declared_kept_state(subject, "block_attnres"),
                     cause=[STATE], what=f"one Block AttnRes module reused ({mode}, "
                          f"{'with' if with_backward else 'without'} a backward)")
