"""RMSNorm, mean form: x / sqrt(mean(x^2, -1) + eps) * g.

Zhang & Sennrich 2019 write a_i / RMS(a) * g_i with RMS(a) = sqrt(mean(a^2)) and
no epsilon; the eps inside the root is the usual implementation (tier c, ours).
"""
from __future__ import annotations

import torch
from torch import nn


def rms_norm(x: torch.Tensor, eps: float, gain: torch.Tensor | None = None) -> torch.Tensor:
    """Normalise the last axis of `x` by its root mean square; multiply by `gain` if given."""
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # rmsnorm: 1/sqrt(mean(x^2) + eps)
    normed = x * inv_rms  # rmsnorm: x / RMS(x)
    if gain is None:
        return normed
    return normed * gain  # rmsnorm: * g (learned gain)


class RMSNorm(nn.Module):
    """RMSNorm over the last axis with a learned gain `gain` [d], initialised to ones."""

    def __init__(
        self,
        d: int,
        eps: float = 1e-6,
        *,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if d < 1:
            raise ValueError(f"RMSNorm: d must be >= 1, got {d}")
        self.d = d
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d, dtype=dtype, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.eps, self.gain)

    def extra_repr(self) -> str:
        return f"d={self.d}, eps={self.eps}"
