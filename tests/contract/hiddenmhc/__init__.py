"""hiddenmhc: an mHC package the fidelity project has never seen, with the streams hidden inside.

Its own API, not fidelity's: `MHCStack(dim, layers, streams=4)` takes a hidden [.., dim] and returns
one; inside, the hidden is copied into `streams` streams, each layer runs inside a manifold-constrained
hyper-connection (static coefficients: H_pre = sigmoid, H_post = 2 sigmoid, H_res = Sinkhorn of its
logits, 20 steps), and the streams are summed at the end. The variants are the shortcuts other
packages took:
- MHCStackFastMix mixes a detached copy of the streams ("no gradient needed through the mix"),
- MHCStackStaticRes keeps H_res at the identity it is initialised near (its logits stay registered),
- MHCStackAnnealed counts its calls and drops Sinkhorn steps as the count grows,
- MHCStackRowSoftmax takes H_res as a softmax of each row ("Sinkhorn is slow; rows are what mixes"), so
  its columns do not sum to one.
Nothing here knows fidelity.
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["MHCStack", "MHCStackAnnealed", "MHCStackFastMix", "MHCStackRowSoftmax", "MHCStackStaticRes"]


def _sinkhorn(logits: torch.Tensor, steps: int) -> torch.Tensor:
    log_m = logits
    for _ in range(steps):
        log_m = log_m - torch.logsumexp(log_m, dim=-2, keepdim=True)
        log_m = log_m - torch.logsumexp(log_m, dim=-1, keepdim=True)
    return log_m.exp()


class _Connection(nn.Module):
    def __init__(self, streams: int) -> None:
        super().__init__()
        self.pre_logits = nn.Parameter(torch.full((streams,), 4.0))
        self.post_logits = nn.Parameter(torch.zeros(streams))
        self.res_logits = nn.Parameter(8.0 * torch.eye(streams))


class MHCStack(nn.Module):
    sinkhorn_steps = 20

    def __init__(self, dim: int, layers: list[nn.Module], streams: int = 4) -> None:
        super().__init__()
        if dim < 1 or not layers:
            raise ValueError("hiddenmhc.MHCStack: dim >= 1 and at least one layer")
        self.dim, self.streams = dim, streams
        self.layers = nn.ModuleList(layers)
        self.connections = nn.ModuleList(_Connection(streams) for _ in layers)

    def _h_res(self, c: _Connection) -> torch.Tensor:
        return _sinkhorn(c.res_logits, self.sinkhorn_steps)

    def _mix(self, h_res: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("ji,...id->...jd", h_res, x)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        x = hidden.unsqueeze(-2).expand(*hidden.shape[:-1], self.streams, self.dim)
        for c, layer in zip(self.connections, self.layers):
            pre, post = torch.sigmoid(c.pre_logits), 2 * torch.sigmoid(c.post_logits)
            y = layer((pre.unsqueeze(-1) * x).sum(-2))
            x = self._mix(self._h_res(c), x) + post.unsqueeze(-1) * y.unsqueeze(-2)
        return x.sum(-2)


class MHCStackFastMix(MHCStack):
    def _mix(self, h_res: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("ji,...id->...jd", h_res, x.detach())


class MHCStackStaticRes(MHCStack):
    def _h_res(self, c: _Connection) -> torch.Tensor:
        return torch.eye(self.streams, dtype=c.res_logits.dtype, device=c.res_logits.device)


class MHCStackAnnealed(MHCStack):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls = 0

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.sinkhorn_steps = max(5, 20 - self.calls // 100)
        return super().forward(hidden)


class MHCStackRowSoftmax(MHCStack):
    def _h_res(self, c: _Connection) -> torch.Tensor:
        return torch.softmax(c.res_logits, dim=-1)
