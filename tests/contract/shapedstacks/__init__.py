"""shapedstacks: three hidden-in, hidden-out stacks in the shapes real packages have. Nothing here knows fidelity.

- `DenseStack(dim, layers)`: "mHC" as a softmax over earlier layers' outputs (DenseFormer-like): layer l is fed a
  softmax-weighted sum of the hidden and the earlier layers' outputs, and the stack returns a softmax-weighted sum
  of all of them. No streams, no Sinkhorn, no H_pre / H_post / H_res.
- `MeanMHCStack(dim, layers, streams=4)`: static mHC (H_pre = sigmoid, H_post = 2 sigmoid, H_res = Sinkhorn of its
  logits, 20 steps) on replicated streams, read out as the MEAN of the streams.
- `WidthlessMHCStack(layers, streams=4)`: the same mHC read out as the sum, built without a width: its
  coefficients are per stream, so the width is whatever the hidden brings.
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["DenseStack", "MeanMHCStack", "WidthlessMHCStack"]


class DenseStack(nn.Module):
    def __init__(self, dim: int, layers: list[nn.Module]) -> None:
        super().__init__()
        if dim < 1 or not layers:
            raise ValueError("shapedstacks.DenseStack: dim >= 1 and at least one layer")
        self.layers = nn.ModuleList(layers)
        # layer l > 0 weighs the hidden and the l outputs before it (layer 0 reads the hidden); the readout all L + 1
        self.mix_logits = nn.ParameterList(nn.Parameter(torch.zeros(k + 1)) for k in range(1, len(layers) + 1))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        outputs = [hidden, self.layers[0](hidden)]
        for layer, logits in zip(self.layers[1:], self.mix_logits):
            weights = torch.softmax(logits, dim=0)
            outputs.append(layer(sum(w * v for w, v in zip(weights, outputs))))
        weights = torch.softmax(self.mix_logits[-1], dim=0)
        return sum(w * v for w, v in zip(weights, outputs))


def _sinkhorn(logits: torch.Tensor, steps: int = 20) -> torch.Tensor:
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

    def forward(self, x: torch.Tensor, layer: nn.Module) -> torch.Tensor:
        pre, post = torch.sigmoid(self.pre_logits), 2 * torch.sigmoid(self.post_logits)
        y = layer((pre.unsqueeze(-1) * x).sum(-2))
        return torch.einsum("ji,...id->...jd", _sinkhorn(self.res_logits), x) + post.unsqueeze(-1) * y.unsqueeze(-2)


class _Streams(nn.Module):
    def __init__(self, layers: list[nn.Module], streams: int) -> None:
        super().__init__()
        if not layers:
            raise ValueError("shapedstacks: at least one layer")
        self.streams = streams
        self.layers = nn.ModuleList(layers)
        self.connections = nn.ModuleList(_Connection(streams) for _ in layers)

    def run(self, hidden: torch.Tensor) -> torch.Tensor:
        x = hidden.unsqueeze(-2).expand(*hidden.shape[:-1], self.streams, hidden.shape[-1])
        for connection, layer in zip(self.connections, self.layers):
            x = connection(x, layer)
        return x


class MeanMHCStack(_Streams):
    def __init__(self, dim: int, layers: list[nn.Module], streams: int = 4) -> None:
        if dim < 1:
            raise ValueError("shapedstacks.MeanMHCStack: dim >= 1")
        super().__init__(layers, streams)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.run(hidden).mean(-2)


class WidthlessMHCStack(_Streams):
    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.run(hidden).sum(-2)
