"""The small interface each mechanism's subject implements.

A subject is one implementation under test (our PyTorch reference, our Triton
kernels, an adapter to a public package). Gates talk only to these
signatures, so a new subject plugs in without touching a gate.

Conventions shared by every mechanism:
- tensors are torch tensors; the subject computes in the dtype and on the
  device of its inputs and never casts silently;
- `backward` selects the gradient route where a subject has more than one:
  "autograd" (torch differentiates the forward) or "manual" (a hand-written
  backward). A subject that lacks a route raises NotImplementedError.
"""
from __future__ import annotations

from typing import Callable, Protocol, Sequence

import torch

# The three score conventions of AttnRes depth attention (see specs/attnres.yaml):
#   "paper":     s_i = q . k_i / sqrt(mean(k_i^2) + eps)            (RMSNorm, mean form)
#   "l2_sqrt_d": s_i = q . k_i / sqrt(sum(k_i^2) + eps) / sqrt(d)   (L2 norm, 1/sqrt(d) temperature)
#   "l2":        s_i = q . k_i / sqrt(sum(k_i^2) + eps)             (L2 norm, no temperature)
SCORE_CONVENTIONS = ("paper", "l2_sqrt_d", "l2")


class DepthAttention(Protocol):
    def __call__(
        self,
        sources: torch.Tensor,          # [L, ..., d]: values v_i (raw); keys are norm(v_i)
        query: torch.Tensor,            # [d]: the pseudo-query w_l
        *,
        convention: str = "paper",
        eps: float = 1e-6,
        gain: torch.Tensor | None = None,  # [d]: RMSNorm's learned gain g (None = ones)
        backward: str = "autograd",
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (h, alpha): h [..., d] = sum_i alpha_i v_i, alpha [L, ...] the softmax over sources."""
        ...


def check_depth_attention_inputs(sources: torch.Tensor, query: torch.Tensor, gain: torch.Tensor | None) -> int:
    """The DepthAttention contract on its inputs (shapes, one dtype); returns d. ValueError / TypeError."""
    if sources.dim() < 2:
        raise ValueError(f"sources must be [L, ..., d], got shape {tuple(sources.shape)}")
    d = sources.shape[-1]
    if query.shape != (d,):
        raise ValueError(f"query must be [d] = [{d}], got shape {tuple(query.shape)}")
    if gain is not None and gain.shape != (d,):
        raise ValueError(f"gain must be [d] = [{d}], got shape {tuple(gain.shape)}")
    for name, t in (("query", query), ("gain", gain)):
        if t is not None and t.dtype != sources.dtype:
            raise TypeError(f"{name} dtype {t.dtype} differs from sources dtype {sources.dtype}; no silent casts")
    return d


class SinkhornProjection(Protocol):
    def __call__(
        self,
        logits: torch.Tensor,           # [..., n, n]: H~res
        *,
        t_max: int = 20,
        backward: str = "autograd",
    ) -> torch.Tensor:
        """Eq. 9: M0 = exp(logits); each step a column then a row normalisation; return M(t_max)."""
        ...


# Module factories. Each returns a torch.nn.Module; the module's documented
# parameter names are part of the interface because gates assert per parameter.
MhcResidualFactory = Callable[..., torch.nn.Module]
HyperConnectionFactory = Callable[..., torch.nn.Module]
LoopModelFactory = Callable[..., torch.nn.Module]
BlockAttnResFactory = Callable[..., torch.nn.Module]

MECHANISMS: Sequence[str] = (
    "depth_attention",
    "sinkhorn",
    "block_attnres",
    "mhc_residual",
    "hyper_connection",
    "loop_model",
)
