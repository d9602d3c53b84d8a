"""Full and Block Attention Residuals (arXiv:2603.15031, Eqs. 5-6, Algorithm 1).

L sublayers f_1..f_L of width d are grouped into N blocks of S = ceil(L/N)
consecutive sublayers (the last block holds the remainder; N = L is Full AttnRes).

    Eq. 5   b_n^i = b_n^{i-1} + f_l(h_l),  b_n^0 = 0,  b_n = b_n^S
    Eq. 6   layer i of block n attends  V = [b_0, ..., b_{n-1}]              if i = 1
                                        V = [b_0, ..., b_{n-1}, b_n^{i-1}]   if i >= 2
            with b_0 = h_1, the embedding: a permanent source of its own.
    Eq. 2-4 h_l = sum_v softmax(s(w_l, v)) v, one softmax over all sources, w_l zero-init (§5).

Two computations of the same h_l (`mode`):
- "direct": gather the source list and call `depth_attend` (one softmax).
- "two_phase" (Alg. 1): phase 1 scores the inter-block sources [b_0..b_{n-1}] for all
  S queries of block n at once and keeps (o, m, l) = (un-normalised exp-weighted sum,
  max, sum-exp); phase 2 scores b_n^{i-1} alone for layer i; the online-softmax merge
      h = (e^{m1-m} o1 + e^{m2-m} o2) / (e^{m1-m} l1 + e^{m2-m} l2),  m = max(m1, m2)
  is exact. Both phases use the SAME score convention.

The defects of record 000 §5 are each one line here, written the right way round:
D4 (phase 2 scored with another convention), D5 (h_1 summed into block 1),
D6 (layer 1 of a block returns the stored b_{n-1}), D7 (layer 2 of block 1 returns the
sum b_0 + f_1, not a softmax mixture), D8 (a completed block appended twice).

Output (tier c, ours: the paper's equations stop at h_L): forward returns
h_out = the same attention over every completed source [b_0..b_N] with its own
zero-init query `output_query`.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from torch import nn

from .depth_attention import BACKWARD_ROUTES, convention_constants, depth_attend, score_terms

MODES = ("direct", "two_phase")


def attn_with_stats(scores: torch.Tensor, values: torch.Tensor):
    """Alg. 1 ATTNWITHSTATS over the source axis (dim 0): return (o, m, l, p).

    m = max_i s_i, p_i = e^{s_i - m}, l = sum_i p_i, o = sum_i p_i v_i (un-normalised, so h = o / l).
    """
    m = scores.amax(dim=0)  # attnres.alg1: max statistic m
    p = torch.exp(scores - m)  # attnres.alg1: un-normalised weights e^{s_i - m}
    l = p.sum(dim=0)  # attnres.alg1: sum-exp statistic l
    o = (p.unsqueeze(-1) * values).sum(dim=0)  # attnres.alg1: o = sum_i e^{s_i - m} v_i (not divided by l)
    return o, m, l, p


class BlockAttnRes(nn.Module):
    """Block AttnRes over L sublayers in N blocks; N = L is Full AttnRes.

    Parameters: queries [L, d] (w_l, zero init), output_query [d] (zero init); with
    learned_gain also gains [L, d] and output_gain [d] (RMSNorm gains, ones init).
    Sublayers that are nn.Modules are registered in `sublayer_modules`.
    """

    def __init__(
        self,
        sublayers: Sequence[Callable[[torch.Tensor], torch.Tensor]],
        d: int,
        num_blocks: int,
        *,
        convention: str = "paper",
        eps: float = 1e-6,
        learned_gain: bool = False,
        mode: str = "direct",
        backward: str = "autograd",
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        L = len(sublayers)
        if L < 1:
            raise ValueError("BlockAttnRes: needs at least one sublayer")
        if not isinstance(num_blocks, int) or not 1 <= num_blocks <= L:
            raise ValueError(f"BlockAttnRes: num_blocks must be in [1, L] = [1, {L}], got {num_blocks!r}")
        S = math.ceil(L / num_blocks)  # attnres.eq5: block size S = L / N, the last block holds the remainder
        blocks = [list(range(start, min(start + S, L))) for start in range(0, L, S)]
        if len(blocks) != num_blocks:
            raise ValueError(
                f"BlockAttnRes: L = {L} sublayers in blocks of S = ceil(L/N) = {S} give {len(blocks)} blocks, "
                f"not N = {num_blocks}; choose N so that ceil(L/N) blocks of S cover L exactly N times"
            )
        convention_constants(convention, d)  # validates the convention
        if mode not in MODES:
            raise ValueError(f"BlockAttnRes: unknown mode {mode!r}; expected one of {MODES}")
        if backward not in BACKWARD_ROUTES:
            raise ValueError(f"BlockAttnRes: unknown backward route {backward!r}; expected one of {BACKWARD_ROUTES}")
        self.d, self.L, self.num_blocks, self.block_size = d, L, num_blocks, S
        self.blocks = blocks
        self.convention, self.eps, self.mode, self.backward = convention, eps, mode, backward
        self._sublayers = list(sublayers)
        self.sublayer_modules = nn.ModuleList([f for f in sublayers if isinstance(f, nn.Module)])
        kw = dict(dtype=dtype, device=device)
        self.queries = nn.Parameter(torch.zeros(L, d, **kw))  # attnres.s5: one pseudo-query w_l per sublayer, zero init
        self.output_query = nn.Parameter(torch.zeros(d, **kw))  # ours: the output aggregation's query, zero init
        if learned_gain:
            self.gains = nn.Parameter(torch.ones(L, d, **kw))
            self.output_gain = nn.Parameter(torch.ones(d, **kw))
        else:
            self.register_parameter("gains", None)
            self.register_parameter("output_gain", None)

    # --- one h_l ---------------------------------------------------------------------

    def _gain(self, l: int) -> torch.Tensor | None:
        return None if self.gains is None else self.gains[l]

    def _attend(self, sources, query, gain):
        """Direct: one softmax over the gathered sources (Eqs. 2-4 via depth_attend)."""
        values = torch.stack([v for _, v in sources])
        return depth_attend(
            values, query, convention=self.convention, eps=self.eps, gain=gain, backward=self.backward
        )

    def _phase1(self, completed, layers, form):
        """Alg. 1 phase 1: score [b_0..b_{n-1}] for all S queries of the block at once."""
        values = torch.stack([v for _, v in completed]).unsqueeze(1)  # [K, 1, ..., d]
        lead = [1] * (values.dim() - 3)
        S = len(layers)
        query = self.queries[layers].reshape(1, S, *lead, self.d)  # [1, S, 1.., d]: Q = [w_l]_{l in B_n}
        gain = None if self.gains is None else self.gains[layers].reshape(1, S, *lead, self.d)
        scores, _, _ = score_terms(values, query, m=form[0], scale=form[1], eps=self.eps, gain=gain)  # [K, S, ...]
        return attn_with_stats(scores, values)  # attnres.alg1: (o1, m1, l1) for every query of block n

    def _two_phase(self, phase1, j, intra, l, form):
        """Alg. 1 phase 2 and merge for the j-th layer of the block (j = i - 1)."""
        o1, m1, l1, p1 = phase1[0][j], phase1[1][j], phase1[2][j], phase1[3][:, j]
        if not intra:
            return o1 / l1.unsqueeze(-1), p1 / l1  # attnres.alg1, i = 1: h_l = o1 / l1, inter-block sources only
        values = torch.stack([v for _, v in intra])  # [1, ..., d]: b_n^{i-1}
        scores, _, _ = score_terms(values, self.queries[l], m=form[0], scale=form[1], eps=self.eps, gain=self._gain(l))
        o2, m2, l2, p2 = attn_with_stats(scores, values)  # attnres.alg1 phase 2: ATTNWITHSTATS(w_l, b_n^i, b_n^i)
        m = torch.maximum(m1, m2)  # attnres.alg1: m_l = max(m1, m2)
        c1, c2 = torch.exp(m1 - m), torch.exp(m2 - m)  # attnres.alg1: e^{m1 - m}, e^{m2 - m}
        denom = c1 * l1 + c2 * l2  # attnres.alg1: e^{m1-m} l1 + e^{m2-m} l2
        h = (c1.unsqueeze(-1) * o1 + c2.unsqueeze(-1) * o2) / denom.unsqueeze(-1)  # attnres.alg1: online-softmax merge
        return h, torch.cat([c1 * p1, c2 * p2]) / denom

    # --- the stack -------------------------------------------------------------------

    def forward(self, h1: torch.Tensor, *, mode: str | None = None, return_trace: bool = False):
        """Run the L sublayers from the embedding h1 [..., d].

        Returns h_out [..., d], or (h_out, trace) with one dict per sublayer:
        {"layer": l (1-based), "block": n, "position": i, "sources": ["b0", "b1", "b2^1", ...],
         "h": h_l, "alpha": alpha over those sources, "y": f_l(h_l)}.
        """
        mode = self.mode if mode is None else mode
        if mode not in MODES:
            raise ValueError(f"BlockAttnRes: unknown mode {mode!r}; expected one of {MODES}")
        if h1.shape[-1] != self.d:
            raise ValueError(f"h1 must be [..., d] = [..., {self.d}], got {tuple(h1.shape)}")
        phase1_form = convention_constants(self.convention, self.d)  # (m, scale) of the score convention
        phase2_form = phase1_form  # no D4: phase 2 scores with the SAME convention (m, scale) as phase 1
        completed = [("b0", h1)]  # attnres.eq6: b_0 = h_1, a permanent source of its own (no D5)
        trace = []
        for n, layers in enumerate(self.blocks, start=1):
            partial = torch.zeros_like(h1)  # attnres.eq5: b_n^0 = 0 (no D5: h_1 is never summed into a block)
            if mode == "two_phase":
                phase1 = self._phase1(completed, layers, phase1_form)
            for i, l in enumerate(layers, start=1):
                if i == 1:
                    sources = list(completed)  # attnres.eq6, i = 1: attend [b_0..b_{n-1}] (no D6: not the stored b_{n-1})
                else:
                    sources = completed + [(f"b{n}^{i - 1}", partial)]  # attnres.eq6, i >= 2: [b_0..b_{n-1}, b_n^{i-1}]
                if mode == "two_phase":
                    h_l, alpha = self._two_phase(phase1, i - 1, sources[len(completed):], l, phase2_form)
                else:
                    h_l, alpha = self._attend(sources, self.queries[l], self._gain(l))  # attnres.eq2/4: softmax mixture (no D7)
                y = self._sublayers[l](h_l)  # f_l(h_l)
                partial = partial + y  # attnres.eq5: b_n^i = b_n^{i-1} + f_l(h_l)
                if return_trace:
                    trace.append(
                        {"layer": l + 1, "block": n, "position": i, "sources": [name for name, _ in sources],
                         "h": h_l, "alpha": alpha, "y": y}
                    )
            completed.append((f"b{n}", partial))  # attnres.eq5: b_n = b_n^S joins the sources exactly once (no D8)
        h_out, _ = self._attend(completed, self.output_query, self.output_gain)
        return (h_out, trace) if return_trace else h_out

    def extra_repr(self) -> str:
        return (
            f"d={self.d}, L={self.L}, num_blocks={self.num_blocks}, block_size={self.block_size}, "
            f"convention={self.convention!r}, eps={self.eps}, mode={self.mode!r}"
        )
