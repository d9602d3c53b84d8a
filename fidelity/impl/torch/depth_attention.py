"""AttnRes depth attention (arXiv:2603.15031, Eqs. 2-4; §3.1; Table 5 fn 2).

One pseudo-query q = w_l attends over L sources v_0..v_{L-1} along the source
axis (dim 0). Keys are normalised, values are raw, and there is ONE softmax over
all sources:

    s_i   = scale * (q . (g * v_i)) * (m * ||v_i||^2 + eps)^(-1/2)
    alpha = softmax_i(s_i)
    h     = sum_i alpha_i v_i

Every score convention is one (m, scale) pair (see `convention_constants`):

    "paper"      m = 1/d, scale = 1         q . (g k) / sqrt(mean(k^2) + eps)   (RMSNorm, no temperature)
    "l2_sqrt_d"  m = 1,   scale = 1/sqrt(d) q . (g k) / sqrt(sum(k^2) + eps) / sqrt(d)
    "l2"         m = 1,   scale = 1         q . (g k) / sqrt(sum(k^2) + eps)

so eps sits inside the root exactly where each convention puts it
(sqrt(mean + eps) = sqrt(m * sum + eps) for the paper form).

Two gradient routes share this forward: "autograd" (torch differentiates it)
and "manual" (`_DepthAttendManual`, a hand-written adjoint). The manual
derivative of the score carries the norm's factor m:

    ds_i/dv_i = scale * (q * g * inv_i - m * v_i * (q . (g v_i)) * inv_i^3),  inv_i = (m ||v_i||^2 + eps)^(-1/2)

With the L2 norm m = 1 and a missing m is invisible; under the paper's norm it
is not (integration record 000, §3). Test every convention.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS, check_depth_attention_inputs

BACKWARD_ROUTES = ("autograd", "manual")


def convention_constants(convention: str, d: int) -> tuple[float, float]:
    """Return (m, scale) of a score convention for key width d."""
    if convention == "paper":
        return 1.0 / d, 1.0  # attnres.eq2: q^T RMSNorm(k), mean form (m = 1/d), no temperature
    if convention == "l2_sqrt_d":
        return 1.0, d ** -0.5  # L2 norm (m = 1) with a 1/sqrt(d) temperature
    if convention == "l2":
        return 1.0, 1.0  # L2 norm (m = 1), no temperature
    raise ValueError(f"unknown score convention {convention!r}; expected one of {SCORE_CONVENTIONS}")


def score_terms(
    sources: torch.Tensor,
    query: torch.Tensor,
    *,
    m: float,
    scale: float,
    eps: float,
    gain: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return (scores, qgv, inv) for sources [K, ..., d] and a query broadcastable to them.

    The score is scale * (q . (g v)) * (m ||v||^2 + eps)^(-1/2).
    The query (and gain) may carry extra broadcast axes, e.g. [1, S, 1, d] against
    sources [K, 1, B, d] to score S queries at once; inv depends on the sources only.
    """
    qg = query if gain is None else query * gain  # RMSNorm's gain g applied to the key, folded into q . (g k)
    qgv = (sources * qg).sum(dim=-1)  # attnres.eq2: q . (g v_i)
    inv = torch.rsqrt(m * sources.pow(2).sum(dim=-1) + eps)  # attnres.eq2: key norm 1/sqrt(m ||v_i||^2 + eps)
    scores = scale * qgv * inv  # attnres.eq2: s_i = scale * q . (g v_i) / sqrt(m ||v_i||^2 + eps)
    return scores, qgv, inv


def _depth_forward(sources, query, gain, m, scale, eps):
    """The forward both gradient routes share: (h, alpha, qgv, inv)."""
    scores, qgv, inv = score_terms(sources, query, m=m, scale=scale, eps=eps, gain=gain)
    alpha = torch.softmax(scores, dim=0)  # attnres.eq2: ONE softmax over the source axis (dim 0)
    h = (alpha.unsqueeze(-1) * sources).sum(dim=0)  # attnres.eq4: h = sum_i alpha_i v_i (values raw)
    return h, alpha, qgv, inv


class _DepthAttendManual(torch.autograd.Function):
    """Depth attention with a hand-written backward for sources, query and gain."""

    @staticmethod
    def forward(ctx, sources, query, gain, m, scale, eps):
        h, alpha, qgv, inv = _depth_forward(sources, query, gain, m, scale, eps)
        ctx.save_for_backward(sources, query, gain, alpha, qgv, inv)
        ctx.m, ctx.scale = m, scale
        return h, alpha

    @staticmethod
    @once_differentiable
    def backward(ctx, dh, dalpha_out):
        sources, query, gain, alpha, qgv, inv = ctx.saved_tensors
        m, scale = ctx.m, ctx.scale
        d = sources.shape[-1]
        qg = query if gain is None else query * gain
        dalpha = (sources * dh.unsqueeze(0)).sum(dim=-1) + dalpha_out  # adjoint of eq4: dL/dalpha_i = v_i . dh
        ds = alpha * (dalpha - (alpha * dalpha).sum(dim=0, keepdim=True))  # softmax adjoint over the source axis
        inv_e = inv.unsqueeze(-1)
        ds_dv = scale * (qg * inv_e - m * sources * (qgv * inv.pow(3)).unsqueeze(-1))  # ds_i/dv_i: the norm's factor m
        dsources = alpha.unsqueeze(-1) * dh.unsqueeze(0) + ds.unsqueeze(-1) * ds_dv  # value path alpha_i dh + key path
        ds_dqg = scale * ((ds.unsqueeze(-1) * inv_e) * sources).reshape(-1, d).sum(dim=0)  # sum_i ds_i scale inv_i v_i
        dquery = ds_dqg if gain is None else ds_dqg * gain  # ds/dq_j = scale g_j v_ij inv_i
        dgain = None if gain is None else ds_dqg * query  # ds/dg_j = scale q_j v_ij inv_i
        return dsources, dquery, dgain, None, None, None


def depth_attend(
    sources: torch.Tensor,
    query: torch.Tensor,
    *,
    convention: str = "paper",
    eps: float = 1e-6,
    gain: torch.Tensor | None = None,
    backward: str = "autograd",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (h [..., d], alpha [L, ...]) for sources [L, ..., d] and a pseudo-query [d]."""
    d = check_depth_attention_inputs(sources, query, gain)
    m, scale = convention_constants(convention, d)
    if backward == "autograd":
        h, alpha, _, _ = _depth_forward(sources, query, gain, m, scale, eps)
        return h, alpha
    if backward == "manual":
        return _DepthAttendManual.apply(sources, query, gain, m, scale, eps)
    raise ValueError(f"unknown backward route {backward!r}; expected one of {BACKWARD_ROUTES}")


class DepthAttention(nn.Module):
    """One AttnRes aggregation: a pseudo-query `query` [d] and an optional learned RMSNorm `gain` [d].

    attnres §5: "all pseudo-query vectors must be initialized to zero", so alpha
    starts uniform (an equal-weight average of the sources).
    """

    def __init__(
        self,
        d: int,
        *,
        convention: str = "paper",
        eps: float = 1e-6,
        learned_gain: bool = False,
        backward: str = "autograd",
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if d < 1:
            raise ValueError(f"DepthAttention: d must be >= 1, got {d}")
        convention_constants(convention, d)  # validates the convention
        if backward not in BACKWARD_ROUTES:
            raise ValueError(f"unknown backward route {backward!r}; expected one of {BACKWARD_ROUTES}")
        self.d, self.convention, self.eps, self.backward = d, convention, eps, backward
        self.query = nn.Parameter(torch.zeros(d, dtype=dtype, device=device))  # attnres.s5: pseudo-query zero init
        if learned_gain:
            self.gain = nn.Parameter(torch.ones(d, dtype=dtype, device=device))
        else:
            self.register_parameter("gain", None)

    def forward(self, sources: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return depth_attend(
            sources, self.query, convention=self.convention, eps=self.eps, gain=self.gain, backward=self.backward
        )

    def extra_repr(self) -> str:
        return f"d={self.d}, convention={self.convention!r}, eps={self.eps}, backward={self.backward!r}"
