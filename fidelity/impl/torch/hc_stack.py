"""Hyper-Connections hidden in, hidden out (arXiv:2409.19606, §2.1, Eqs. 3-5, Alg. 1): one DHC per layer body.

The hidden h [.., d] becomes n replicated streams (hc.setup), layer k's body T_k runs inside its own
hyper-connection H^ = B^T T_k(A_m^T H)^T + A_r^T H (Eq. 5), and the streams are summed back into a hidden
(hc.readout_sum). The connections are HyperConnection at its defaults (DHC, Eq. 14's init); this file only wires
them.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from .hyper_connections import HyperConnection

STREAMS = 4  # an expansion rate of Table 1 (DHC x4), the one Table 3's ablations use


class HcStack(nn.Module):
    """stack(h) for h [.., d]: one HyperConnection(STREAMS, d, k) per body k, in order."""

    def __init__(self, d: int, bodies: Sequence[nn.Module], *, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        if len(bodies) == 0:
            raise ValueError("HcStack: needs at least one layer body")
        # a width d < 1 is each connection's d < 1, which HyperConnection refuses
        self.connections = nn.ModuleList(HyperConnection(STREAMS, d, k, dtype=dtype, device=device)
                                         for k in range(len(bodies)))
        self.bodies = tuple(bodies)  # the caller's layers, any callables: held, not registered as the stack's

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        H = self.connections[0].expand(h)  # hc.setup: n copies of the hidden
        for connection, body in zip(self.connections, self.bodies):
            H = connection(H, body)  # hc.eq5: H^ = B^T T(A_m^T H)^T + A_r^T H
        return self.connections[-1].readout(H)  # hc.readout_sum: the streams summed
