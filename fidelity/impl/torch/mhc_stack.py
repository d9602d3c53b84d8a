"""mHC hidden in, hidden out (arXiv:2512.24880, Eq. 3): a stack of mHC residual connections, one per layer body.

The hidden h [.., d] becomes n replicated streams of width d (the paper layout, mhc.s3), each body F_l
runs inside its own connection x_{l+1} = H_res x_l + H_post^T F_l(H_pre x_l), and the streams are summed
back into a hidden (hc.alg1). The connections are MhcResidual at Table 5's values; this file only wires them.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from .mhc import MhcResidual

STREAMS = 4  # mHC Table 5: n = 4


class MhcStack(nn.Module):
    """stack(h) for h [.., d]: one MhcResidual(STREAMS, d) per body, in order."""

    def __init__(self, d: int, bodies: Sequence[nn.Module], *, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        if len(bodies) == 0:
            raise ValueError("MhcStack: needs at least one layer body")
        # a width d < 1 is each connection's C < 1, which MhcResidual refuses
        self.connections = nn.ModuleList(MhcResidual(STREAMS, d, dtype=dtype, device=device) for _ in bodies)
        self.bodies = tuple(bodies)  # the caller's layers, any callables: held, not registered as the stack's

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        x = self.connections[0].expand(h)  # mhc.s3: n copies of the hidden
        for connection, body in zip(self.connections, self.bodies):
            x = connection(x, body)  # mhc.eq3: x_{l+1} = H_res x_l + H_post^T F_l(H_pre x_l)
        return self.connections[-1].readout(x)  # hc.alg1: the streams summed
