"""mHC residual: Manifold-Constrained Hyper-Connections (arXiv:2512.24880, Eqs. 3, 7, 8, 9).

    Eq. 7   x' = RMSNorm(vec(x_l))                          (mean form over nC, eps = 1e-20, no gain)
            H~pre  = alpha_pre  * (x' phi_pre)  + b_pre      [.., n]
            H~post = alpha_post * (x' phi_post) + b_post     [.., n]
            H~res  = alpha_res  * mat(x' phi_res) + b_res    [.., n, n]   (no tanh in Eq. 7)
    Eq. 8   H_pre = sigma(H~pre),  H_post = 2 sigma(H~post),  H_res = Sinkhorn-Knopp(H~res)
    Eq. 3   x_{l+1} = H_res x_l + H_post^T F(H_pre x_l)

Two stream layouts (record 004, §1-2):
- "paper": x is [.., n, C], n replicated copies of a C-wide state (`expand(h)`);
  the body runs at width C on u = H_pre x; out = H_res x + H_post^T y, y broadcast
  to each stream weighted by H_post[j]; `readout` sums the streams.
- "sliced": a hidden [.., D], D = nC, split into n disjoint slices x [.., n, C];
  the body runs at full width D on the hidden, y viewed as [.., n, C];
  out[j] = sum_i H_res[j, i] x[i] + H_post[j] y[j]; `readout` concatenates back to D.
  H_pre is computed but not wired, so phi_pre, alpha_pre and b_pre get no gradient.

Initialisation (tier c, ours; the paper states none): b_pre = static_init (sigma(10) ~ 1),
b_post = 0 (2 sigma(0) = 1), b_res = static_init * I (Sinkhorn ~ identity), alpha_* = 0.01
(App. A.1 Table 5). phi_* are zero when dynamic_init_std = 0 (HC's choice, 2409.19606 §2.3),
otherwise Normal(0, std) drawn from the given generator.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from .rmsnorm import rms_norm
from .sinkhorn import sinkhorn

LAYOUTS = ("paper", "sliced")


class MhcResidual(nn.Module):
    """One mHC residual connection over n streams of width C.

    Parameters: phi_pre [nC, n], phi_post [nC, n], phi_res [nC, n*n]; alpha_pre, alpha_post,
    alpha_res (scalars); b_pre [n], b_post [n], b_res [n, n].
    """

    def __init__(
        self,
        n: int,
        C: int,
        *,
        layout: str = "paper",
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        eps: float = 1e-20,
        alpha_init: float = 0.01,
        static_init: float = 10.0,
        dynamic_init_std: float = 0.0,
        t_max: int = 20,
        sinkhorn_backward: str = "autograd",
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(n, int) or n < 1:
            raise ValueError(
                f"MhcResidual: n must be >= 1 (got {n!r}); n = 0 would silently build an empty residual "
                "stream or, clamped, train the n = 1 arm, which 2409.19606 Tab. 1 measures below the baseline"
            )
        if not isinstance(C, int) or C < 1:
            raise ValueError(f"MhcResidual: C must be >= 1 (got {C!r})")
        if layout not in LAYOUTS:
            raise ValueError(f"MhcResidual: unknown layout {layout!r}; expected one of {LAYOUTS}")
        if dynamic_init_std < 0:
            raise ValueError(f"MhcResidual: dynamic_init_std must be >= 0, got {dynamic_init_std}")
        if dynamic_init_std > 0 and generator is None:
            raise ValueError("MhcResidual: dynamic_init_std > 0 draws phi_* at random and needs an explicit generator")
        self.n, self.C, self.layout = n, C, layout
        self.eps, self.t_max, self.sinkhorn_backward = eps, t_max, sinkhorn_backward
        nC = n * C
        kw = dict(dtype=dtype, device=device)

        def dynamic(cols: int) -> nn.Parameter:
            if dynamic_init_std == 0:
                return nn.Parameter(torch.zeros(nC, cols, **kw))
            draw = torch.randn(nC, cols, generator=generator, dtype=dtype, device=generator.device)
            return nn.Parameter((draw * dynamic_init_std).to(device=device))

        self.phi_pre = dynamic(n)
        self.phi_post = dynamic(n)
        self.phi_res = dynamic(n * n)
        self.alpha_pre = nn.Parameter(torch.tensor(alpha_init, **kw))
        self.alpha_post = nn.Parameter(torch.tensor(alpha_init, **kw))
        self.alpha_res = nn.Parameter(torch.tensor(alpha_init, **kw))
        self.b_pre = nn.Parameter(torch.full((n,), static_init, **kw))
        self.b_post = nn.Parameter(torch.zeros(n, **kw))
        self.b_res = nn.Parameter(static_init * torch.eye(n, **kw))

    # --- stream layout -------------------------------------------------------------

    def expand(self, h: torch.Tensor) -> torch.Tensor:
        """The stream state [.., n, C] for a hidden h: n copies of h [.., C] ("paper") or h [.., nC] split ("sliced")."""
        if self.layout == "paper":
            return h.unsqueeze(-2).expand(*h.shape[:-1], self.n, self.C)  # mhc.s3: x_l = (h, ..., h), replicated
        return h.reshape(*h.shape[:-1], self.n, self.C)  # sliced: n disjoint slices of the hidden

    def readout(self, x: torch.Tensor) -> torch.Tensor:
        """The hidden for a stream state [.., n, C]: sum over streams ("paper") or concatenation ("sliced")."""
        if self.layout == "paper":
            return x.sum(dim=-2)  # hc.alg1: sum the streams
        return x.reshape(*x.shape[:-2], self.n * self.C)  # sliced: the slices reassemble to D

    # --- Eqs. 7-9 --------------------------------------------------------------------

    def coefficients(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Return (H_pre [.., n], H_post [.., n], H_res [.., n, n]) for a stream state x [.., n, C]."""
        self._check_state(x)
        n = self.n
        x_vec = x.reshape(*x.shape[:-2], n * self.C)  # mhc.eq7: vec(x_l), [.., nC]
        x_norm = rms_norm(x_vec, self.eps)  # mhc.eq7: x' = RMSNorm(vec x_l), mean over nC, eps 1e-20, no gain
        pre_tilde = self.alpha_pre * (x_norm @ self.phi_pre) + self.b_pre  # mhc.eq7: H~pre = a_pre (x' phi_pre) + b_pre
        post_tilde = self.alpha_post * (x_norm @ self.phi_post) + self.b_post  # mhc.eq7: H~post
        res_flat = x_norm @ self.phi_res  # mhc.eq7: x' phi_res, [.., n*n]
        res_tilde = self.alpha_res * res_flat.reshape(*res_flat.shape[:-1], n, n) + self.b_res  # mhc.eq7: H~res, mat() row-major
        h_pre = torch.sigmoid(pre_tilde)  # mhc.eq8: H_pre = sigma(H~pre)
        h_post = 2.0 * torch.sigmoid(post_tilde)  # mhc.eq8: H_post = 2 sigma(H~post)
        h_res = sinkhorn(res_tilde, t_max=self.t_max, backward=self.sinkhorn_backward)  # mhc.eq8: H_res = SK(H~res)
        return h_pre, h_post, h_res

    # --- Eq. 3 -----------------------------------------------------------------------

    def forward(self, x: torch.Tensor, body: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """x_{l+1} [.., n, C] for a stream state x [.., n, C] and a layer body F."""
        h_pre, h_post, h_res = self.coefficients(x)
        if self.layout == "paper":
            u = (h_pre.unsqueeze(-1) * x).sum(dim=-2)  # mhc.eq3: layer input H_pre x_l, [.., C]
            y_streams = body(u).unsqueeze(-2)  # mhc.eq3: F(H_pre x_l) at width C, broadcast to each stream
        else:
            y_streams = body(self.readout(x)).reshape(x.shape)  # sliced: F at full width D, read as n slices
        mixed = h_res @ x  # mhc.eq3: H_res x_l, out[j] = sum_i H_res[j, i] x[i]
        return mixed + h_post.unsqueeze(-1) * y_streams  # mhc.eq3: + H_post^T F, stream j weighted by H_post[j]

    def _check_state(self, x: torch.Tensor) -> None:
        if x.dim() < 2 or x.shape[-2:] != (self.n, self.C):
            raise ValueError(f"stream state must be [.., n, C] = [.., {self.n}, {self.C}], got {tuple(x.shape)}")
        if x.dtype != self.b_res.dtype:
            raise TypeError(f"state dtype {x.dtype} differs from the parameters' {self.b_res.dtype}; no silent casts")

    def extra_repr(self) -> str:
        return f"n={self.n}, C={self.C}, layout={self.layout!r}, eps={self.eps}, t_max={self.t_max}"
