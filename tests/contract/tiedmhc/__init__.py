"""tiedmhc: another mHC package with the streams inside, whose shortcuts are in what it builds, not in what it runs.

Its own API, not fidelity's: `MHCStack(dim, layers, streams=4)` takes a hidden [.., dim] and returns one; the
hidden is copied into `streams` streams, each layer runs inside a manifold-constrained hyper-connection of its own
(static coefficients: H_pre = sigmoid, H_post = 2 sigmoid, H_res = Sinkhorn of its logits, 20 steps), and the
streams are summed at the end. The shortcut: `MHCStackTied` builds one connection and runs it at every layer ("the
connections barely move from their init anyway; one set of coefficients is enough"). Its every parameter takes
part and its backward is right. A caller may also pass `streams=2` ("most of HC's gain arrives by n = 2").
Nothing here knows fidelity.
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["MHCStack", "MHCStackTied"]


def _sinkhorn(logits: torch.Tensor, steps: int = 20) -> torch.Tensor:
    log_m = logits
    for _ in range(steps):
        log_m = log_m - torch.logsumexp(log_m, dim=-2, keepdim=True)
        log_m = log_m - torch.logsumexp(log_m, dim=-1, keepdim=True)
    return log_m.exp()


class Connection(nn.Module):
    """One layer's hyper-connection: x -> H_res x + H_post^T layer(H_pre x), on streams [.., n, dim]."""

    def __init__(self, streams: int) -> None:
        super().__init__()
        self.pre_logits = nn.Parameter(torch.full((streams,), 4.0))
        self.post_logits = nn.Parameter(torch.zeros(streams))
        self.res_logits = nn.Parameter(8.0 * torch.eye(streams))

    def forward(self, x: torch.Tensor, layer: nn.Module) -> torch.Tensor:
        pre, post = torch.sigmoid(self.pre_logits), 2 * torch.sigmoid(self.post_logits)
        y = layer((pre.unsqueeze(-1) * x).sum(-2))
        mixed = torch.einsum("ji,...id->...jd", _sinkhorn(self.res_logits), x)
        return mixed + post.unsqueeze(-1) * y.unsqueeze(-2)


class MHCStack(nn.Module):
    def __init__(self, dim: int, layers: list[nn.Module], streams: int = 4) -> None:
        super().__init__()
        if dim < 1 or not layers:
            raise ValueError("tiedmhc.MHCStack: dim >= 1 and at least one layer")
        self.dim, self.streams = dim, streams
        self.layers = nn.ModuleList(layers)
        self.connections = self._connections(len(layers))

    def _connections(self, count: int) -> nn.ModuleList:
        return nn.ModuleList(Connection(self.streams) for _ in range(count))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        x = hidden.unsqueeze(-2).expand(*hidden.shape[:-1], self.streams, self.dim)
        for connection, layer in zip(self.connections, self.layers):
            x = connection(x, layer)
        return x.sum(-2)


class MHCStackTied(MHCStack):
    def _connections(self, count: int) -> nn.ModuleList:
        return nn.ModuleList([Connection(self.streams)] * count)  # one connection, run at every layer
