"""Mechanism `depth_attention`: AttnRes depth attention, one pseudo-query over L sources (arXiv:2603.15031, Eqs. 2-4)."""
from __future__ import annotations

from typing import Annotated, Protocol

import torch

from .markers import Doc
from .mechanism import Mechanism

SCORE_CONVENTIONS = ("paper", "l2_sqrt_d", "l2")
"""The three score conventions (specs/attnres.yaml, attnres.score_conventions):
    "paper":     s_i = q . (g k_i) / sqrt(mean(k_i^2) + eps)            (RMSNorm, mean form, no temperature)
    "l2_sqrt_d": s_i = q . (g k_i) / sqrt(sum(k_i^2) + eps) / sqrt(d)   (L2 norm, 1/sqrt(d) temperature)
    "l2":        s_i = q . (g k_i) / sqrt(sum(k_i^2) + eps)             (L2 norm, no temperature)"""


class DepthAttention(Protocol):
    """h, alpha = fn(sources, query, convention=, eps=, gain=, backward=).

    Keys are the normalised sources, values the raw ones, and there is ONE softmax over all
    L sources (dim 0): s_i = scale * q . (g v_i) / sqrt(m ||v_i||^2 + eps), alpha = softmax_i(s_i),
    h = sum_i alpha_i v_i, with (m, scale) = (1/d, 1) for "paper", (1, 1/sqrt(d)) for "l2_sqrt_d",
    (1, 1) for "l2" (SCORE_CONVENTIONS).

    Contract: compute in the dtype and on the device of `sources`; never cast. Gradients reach
    `sources`, `query` and `gain`, with cotangents on both h and alpha. ValueError for a shape
    outside the contract or an unknown convention / route; TypeError when query or gain differ
    in dtype from sources (check_depth_attention_inputs states both). NotRun for a convention,
    a gain, an eps (a package that needs eps > 0 refuses the gates' eps = 0 this way), a route or a
    dtype the subject cannot drive. A forward-only subject (Capability backward=("none",)) is called
    without `backward=`: the forward gates run on it, the gradient gates do not.
    """

    def __call__(
        self,
        sources: Annotated[torch.Tensor, Doc("the values v_i (raw); keys are their norm", shape="[L, ..., d]")],
        query: Annotated[torch.Tensor, Doc("the pseudo-query w_l", shape="[d]")],
        *,
        convention: Annotated[str, Doc("score convention, one of SCORE_CONVENTIONS")] = "paper",
        eps: Annotated[float, Doc("added inside the key norm's square root")] = 1e-6,
        gain: Annotated[torch.Tensor | None, Doc("RMSNorm's learned gain g on the keys; None = ones",
                                                  shape="[d]")] = None,
        backward: Annotated[str, Doc("gradient route: 'autograd' or 'manual' (a hand-written backward)")] = "autograd",
    ) -> Annotated[tuple[torch.Tensor, torch.Tensor],
                   Doc("(h, alpha): h = sum_i alpha_i v_i, alpha the softmax over the source axis",
                       shape="([..., d], [L, ...])")]:
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


MECHANISM = Mechanism(
    name="depth_attention",
    summary="AttnRes depth attention: one pseudo-query, normalised keys, one softmax over L sources (Eqs. 2-4)",
    kind="function",
    interface=DepthAttention,
    module_interface=None,
    equations=("attnres.eq1", "attnres.eq2", "attnres.eq3", "attnres.eq4", "attnres.phi", "attnres.eps",
               "attnres.score_conventions", "attnres.no_temperature", "attnres.fig2", "attnres.table5.fn2",
               "attnres.rmsnorm", "attnres.rmsnorm_gain", "rmsnorm.mean_form", "rmsnorm.gain",
               "attnres.init_zero_query", "attnres.stateless"),  # the reference's DepthAttention module starts its query at zero
)
