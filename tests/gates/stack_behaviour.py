"""What the behaviour-level stack gates (test_mhc_stack_behaviour.py, test_hc_stack_behaviour.py) build and read.

The stack is built by its factory as shipped around LAYERS of residual_stack.py's bodies, each wrapped to keep what
it is called on (and to return zeros while the gate silences it); its own parameters are moved to seeded values in
[-SPREAD, SPREAD], whatever they are called: the identities these gates hold are Eq. 3's (mHC) or Eq. 5's (HC) at
any parameter values, so any seeded point does, and at a quarter of residual_stack's spread mHC's Sinkhorn-Knopp
steps converge far below float32 rounding (the point of test_mhc_stack_streams.py). The hidden has TOKENS tokens,
so that a defect showing on some tokens only is seen. In float64 where the subject computes in it, else float32.
"""
from __future__ import annotations

import torch

import residual_stack as stack_gates
from fidelity.gates import readings

LAYERS, TOKENS, SPREAD = 3, 16, 0.25


class Kept(torch.nn.Module):
    """A layer body that keeps what it is called on and returns zeros while `silent` (a module like any body)."""

    def __init__(self, body: torch.nn.Module, silent: bool):
        super().__init__()
        self.body, self.silent, self.inputs = body, silent, []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.inputs.append(x.detach().clone())
        y = self.body(x)
        return torch.zeros_like(y) if self.silent else y


def setup(subject, mech: str, device, silent: list[bool]):
    """(kept bodies, the stack at a seeded point around them, a seeded hidden of TOKENS tokens)."""
    dtype = torch.float64 if subject.supports(mech, dtype=torch.float64) else torch.float32
    kept = [Kept(body, s) for body, s in zip(stack_gates.bodies(dtype, device, LAYERS), silent)]
    stack, _, own = stack_gates.built(subject, mech, dtype, device, kept)
    g = torch.Generator().manual_seed(stack_gates.SEED + 1)
    with torch.no_grad():
        for p in own.values():
            p.copy_(((torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 - 1) * SPREAD).to(p))
    h = torch.randn(TOKENS, stack_gates.D, generator=torch.Generator().manual_seed(stack_gates.SEED + 5),
                    dtype=torch.float64).to(dtype=dtype, device=device)
    return kept, stack, h


def run(stack, kept: list[Kept], h: torch.Tensor, equation: str) -> torch.Tensor:
    """stack(h), each body called once on the tokens of h (else the gate's assertion, reading inf); each body's
    input kept as h's shape (a package may add a batch axis of one around the tokens)."""
    for k in kept:
        k.inputs.clear()
    with torch.no_grad():
        out = stack(h)
    calls = [len(k.inputs) for k in kept]
    if calls != [1] * len(kept) or any(k.inputs[0].numel() != h.numel() or k.inputs[0].shape[-1] != h.shape[-1]
                                       for k in kept):
        readings.record(float("inf"))
        raise AssertionError(f"each body is called once per stack call, on a hidden of {h.shape[0]} tokens of width "
                             f"{h.shape[-1]} ({equation}); calls per body: {calls}, shapes: "
                             f"{[tuple(i.shape) for k in kept for i in k.inputs]}")
    for k in kept:
        k.inputs[0] = k.inputs[0].reshape(h.shape)
    return out


def per_token(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """<a_t, b_t> / <b_t, b_t> per token: the multiple of b_t closest to a_t."""
    return (a * b).sum(-1, keepdim=True) / (b * b).sum(-1, keepdim=True)


def in_span(a: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The point of span{u_t, v_t} closest to a_t, per token (least squares in float64, cast back)."""
    basis = torch.stack([u, v], dim=-1).to(torch.float64)  # [tokens, d, 2]
    coef = torch.linalg.lstsq(basis, a.to(torch.float64).unsqueeze(-1)).solution
    return (basis @ coef).squeeze(-1).to(a.dtype)
