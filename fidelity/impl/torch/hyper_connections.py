"""Hyper-Connections (Zhu et al., arXiv:2409.19606v3, §2, Eqs. 1-14, Alg. 2).

    H = (h ... h)^T in R^{n x d}: n replicated streams (`expand`); readout sums the streams.
    HC = [[0, B], [A_m, A_r]];  here alpha = [A_m | A_r] in R^{n x (n+1)}, beta = B in R^n.
    Eq. 10   H_bar = norm(H)                              (LayerNorm per stream)
    Eq. 11   B(H)   = s_beta  * tanh(H_bar W_beta)^T + B
    Eq. 12/13 [A_m A_r](H) = s_alpha * tanh(H_bar [W_m W_r]) + [A_m A_r]
    Eq. 3/4  mix_h = alpha^T H: row 0 is the layer input h_0 = A_m^T H, rows 1.. are H' = A_r^T H
    Eq. 5    H^ = B^T T(h_0)^T + H'
    Eq. 14   W_* = 0, B = 1, A_m = e_{k mod n}, A_r = I   (k the layer index)

`dynamic=False` is static HC (Eq. 1-5 with the static matrices only, no dynamic
parameters). Nothing here is random, so `generator` is accepted for a uniform
constructor signature and never used.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn


class HyperConnection(nn.Module):
    """One hyper-connection of expansion rate n around a layer body T of width d.

    Parameters: static_beta [n], static_alpha [n, n+1]; when dynamic: dynamic_alpha_fn [d, n+1],
    dynamic_beta_fn [d], alpha_scale, beta_scale (scalars, 0.01), layer_norm (LayerNorm(d)).
    """

    def __init__(
        self,
        n: int,
        d: int,
        layer_index: int,
        *,
        dynamic: bool = True,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        scale_init: float = 0.01,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"HyperConnection: n must be >= 1 (got {n!r}); n = 0 would silently build no stream")
        if not isinstance(d, int) or d < 1:
            raise ValueError(f"HyperConnection: d must be >= 1 (got {d!r})")
        if not isinstance(layer_index, int) or layer_index < 0:
            raise ValueError(f"HyperConnection: layer_index must be an int >= 0 (got {layer_index!r})")
        del generator  # deterministic init (Eq. 14); kept for a uniform constructor signature
        self.n, self.d, self.layer_index, self.dynamic = n, d, layer_index, dynamic
        kw = dict(dtype=dtype, device=device)
        init_alpha0 = torch.zeros(n, 1, **kw)
        init_alpha0[layer_index % n, 0] = 1.0  # hc.eq14: A_m^k = e_{k mod n}
        self.static_beta = nn.Parameter(torch.ones(n, **kw))  # hc.eq14: B^k = 1_{1 x n}
        self.static_alpha = nn.Parameter(torch.cat([init_alpha0, torch.eye(n, **kw)], dim=1))  # hc.eq14: [A_m | A_r = I]
        if dynamic:
            self.dynamic_alpha_fn = nn.Parameter(torch.zeros(d, n + 1, **kw))  # hc.eq14: W_m, W_r = 0
            self.dynamic_beta_fn = nn.Parameter(torch.zeros(d, **kw))  # hc.eq14: W_beta = 0
            self.alpha_scale = nn.Parameter(torch.tensor(scale_init, **kw))  # hc.s2.2: s_alpha, small learnable
            self.beta_scale = nn.Parameter(torch.tensor(scale_init, **kw))  # hc.s2.2: s_beta, small learnable
            self.layer_norm = nn.LayerNorm(d, **kw)

    def expand(self, h: torch.Tensor) -> torch.Tensor:
        """H^0 [.., n, d]: n replicated copies of h [.., d]."""
        return h.unsqueeze(-2).expand(*h.shape[:-1], self.n, self.d)  # hc.s2.1: H^0 = (h^0 ... h^0)^T

    def readout(self, H: torch.Tensor) -> torch.Tensor:
        """The hidden [.., d]: the streams summed (Alg. 1)."""
        return H.sum(dim=-2)  # hc.alg1: sum the last hyper hidden matrix row-wise

    def connections(self, H: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (alpha [.., n, n+1], beta [.., n]) for a hyper hidden H [.., n, d]."""
        if not self.dynamic:
            return self.static_alpha, self.static_beta  # hc.eq1: static HC
        norm_h = self.layer_norm(H)  # hc.eq10: H_bar = norm(H), per stream
        alpha = self.alpha_scale * torch.tanh(norm_h @ self.dynamic_alpha_fn) + self.static_alpha  # hc.eq12/13
        beta = self.beta_scale * torch.tanh(norm_h @ self.dynamic_beta_fn) + self.static_beta  # hc.eq11
        return alpha, beta

    def forward(self, H: torch.Tensor, body: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """H^ [.., n, d] for a hyper hidden H [.., n, d] and a layer body T (width d)."""
        if H.dim() < 2 or H.shape[-2:] != (self.n, self.d):
            raise ValueError(f"H must be [.., n, d] = [.., {self.n}, {self.d}], got {tuple(H.shape)}")
        alpha, beta = self.connections(H)
        mix_h = alpha.transpose(-1, -2) @ H  # hc.eq3/4: alpha^T H, [.., n+1, d]
        h0 = mix_h[..., 0, :]  # hc.eq3: layer input h_0 = A_m^T H
        y = body(h0)  # T(h_0)
        return beta.unsqueeze(-1) * y.unsqueeze(-2) + mix_h[..., 1:, :]  # hc.eq5: B^T T(h_0)^T + H'

    def extra_repr(self) -> str:
        return f"n={self.n}, d={self.d}, layer_index={self.layer_index}, dynamic={self.dynamic}"
