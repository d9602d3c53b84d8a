"""Block AttnRes (arXiv:2603.15031 Eq. 5/6) and Algorithm 1's online-softmax merge.

(a) Source sets. L sublayers f_1..f_L, N blocks, block size S = ceil(L/N);
blocks are filled in order and the LAST block holds the remainder when
L mod N != 0 ("If L mod N != 0, the last block holds the remainder").
b_0 = h_1 (the embedding) is a permanent separate source, never summed into
a block; b_n = sum_{j in B_n} f_j and b_n^i is the partial sum of the first i
layers of block n. The i-th layer of block n attends
    [b_0 .. b_{n-1}]              if i = 1
    [b_0 .. b_{n-1}, b_n^{i-1}]   if i >= 2.
N = L gives Full AttnRes, N = 1 the standard residual with b_0 isolated.

(b) Algorithm 1. Phase 1 attends the inter-block sources once per layer and
returns flash-attention statistics (o un-normalised and taken relative to the
max m, l the sum of exp); phase 2 attends the single intra-block source
b_n^i; the merge is
    m = max(m1, m2),
    h = (e^{m1-m} o1 + e^{m2-m} o2) / (e^{m1-m} l1 + e^{m2-m} l2),
which equals one joint softmax over all sources. Scores use the paper's
convention (q . RMSNorm(v), eps inside the root). mpmath, at the shared
working precision.
"""
from __future__ import annotations

import math
from typing import Sequence

import mpmath

from ._precision import mp, precision

LAYOUTS = ((4, 4), (4, 1), (6, 2), (7, 3), (8, 3), (5, 2))
"""The (L, N) layouts the fixtures cover: Full (4,4), one block (4,1), even and remainder splits."""


def block_partition(L: int, N: int) -> list[list[int]]:
    """The 1-based layer indices of each block: size S = ceil(L/N), the last block holds the remainder.

    Raises ValueError when the rule leaves a block empty (e.g. L = 9, N = 4: S = 3 fills
    three blocks and nothing is left for the fourth), because Eq. 5/6 is then undefined.
    """
    if L < 1 or N < 1 or N > L:
        raise ValueError(f"need 1 <= N <= L, got L = {L}, N = {N}")
    S = math.ceil(L / N)
    blocks = [list(range(n * S + 1, min((n + 1) * S, L) + 1)) for n in range(N)]
    if any(not b for b in blocks):
        raise ValueError(f"L = {L}, N = {N}: S = ceil(L/N) = {S} leaves block(s) empty; Eq. 5/6 undefined")
    return blocks


def source_label(n: int, i: int | None = None) -> str:
    """"b0", "b2" (a completed block) or "b2^1" (partial sum of the first i layers of block n)."""
    return f"b{n}" if i is None else f"b{n}^{i}"


def source_sets(L: int, N: int) -> list[dict]:
    """Per sublayer l = 1..L: its block n, its position i, the attended source labels and their composition.

    Each entry is {"layer": l, "block": n, "i": i, "sources": [labels],
    "composition": {label: ["h1"] or ["f1", "f2", ...]}}.
    """
    blocks = block_partition(L, N)
    out = []
    for n, members in enumerate(blocks, start=1):
        for i, layer in enumerate(members, start=1):
            labels = [source_label(0)] + [source_label(m) for m in range(1, n)]
            comp = {source_label(0): ["h1"]}
            for m in range(1, n):
                comp[source_label(m)] = [f"f{j}" for j in blocks[m - 1]]
            if i >= 2:
                lab = source_label(n, i - 1)
                labels.append(lab)
                comp[lab] = [f"f{j}" for j in members[: i - 1]]
            out.append({"layer": layer, "block": n, "i": i, "sources": labels, "composition": comp})
    return out


def _score(query, source, eps):
    d = len(source)
    r = mpmath.sqrt(mpmath.fsum(x * x for x in source) / d + eps)
    return mpmath.fsum(q * x for q, x in zip(query, source)) / r


def attn_with_stats(query: Sequence, sources: Sequence[Sequence], eps) -> dict:
    """ATTNWITHSTATS for one query: scores, m = max score, l = sum e^{s-m}, o = sum e^{s-m} v (un-normalised)."""
    with precision():
        q = [mp(x) for x in query]
        vs = [[mp(x) for x in v] for v in sources]
        e = mp(eps)
        s = [_score(q, v, e) for v in vs]
        m = max(s)
        w = [mpmath.exp(si - m) for si in s]
        l = mpmath.fsum(w)
        o = [mpmath.fsum(w[k] * vs[k][j] for k in range(len(vs))) for j in range(len(vs[0]))]
        return {"scores": s, "m": m, "l": l, "o": o}


def merge(o1, m1, l1, o2, m2, l2) -> dict:
    """Algorithm 1's online-softmax merge of two statistic sets: returns {"m", "h"}."""
    with precision():
        m1, l1, m2, l2 = mp(m1), mp(l1), mp(m2), mp(l2)
        m = max(m1, m2)
        a, b = mpmath.exp(m1 - m), mpmath.exp(m2 - m)
        den = a * l1 + b * l2
        h = [(a * mp(x1) + b * mp(x2)) / den for x1, x2 in zip(o1, o2)]
        return {"m": m, "h": h}


def two_phase_block(inter_sources: Sequence[Sequence], layer_outputs: Sequence[Sequence],
                    queries: Sequence[Sequence], eps) -> list[dict]:
    """Algorithm 1 over one block of S = len(queries) layers.

    inter_sources: [b_0, ..., b_{n-1}] (d-vectors). layer_outputs[i]: f of the block's
    (i+1)-th layer, GIVEN rather than computed, so each step's h is checkable alone.
    Step i = 0 returns h = o1/l1 (inter-block sources only); step i >= 1 merges phase 1
    with phase 2 on b_n^i = f_1 + ... + f_i. Returns one dict per step with the phase-1
    stats, the partial sum, the phase-2 stats (None at i = 0), m and h.
    """
    if len(layer_outputs) < len(queries) - 1:
        raise ValueError("need a layer output for every step but the last")
    steps = []
    with precision():
        d = len(inter_sources[0])
        partial = [mpmath.mpf(0)] * d
        for i, w in enumerate(queries):
            p1 = attn_with_stats(w, inter_sources, eps)
            if i == 0:
                h = [x / p1["l"] for x in p1["o"]]
                steps.append({"i": 0, "phase1": p1, "partial": list(partial), "phase2": None, "m": p1["m"], "h": h})
            else:
                p2 = attn_with_stats(w, [partial], eps)
                mg = merge(p1["o"], p1["m"], p1["l"], p2["o"], p2["m"], p2["l"])
                steps.append({"i": i, "phase1": p1, "partial": list(partial), "phase2": p2, "m": mg["m"], "h": mg["h"]})
            if i < len(layer_outputs):
                partial = [x + mp(y) for x, y in zip(partial, layer_outputs[i])]
    return steps


# ---- the whole stack: Eqs. 2-6 with the output aggregation, for module-level fixtures -------------

def _convention(convention: str, d: int):
    """(m, t) of a score convention in mpmath: s = t q . (g v) / sqrt(m sum(v^2) + eps)."""
    if convention == "paper":
        return mpmath.mpf(1) / d, mpmath.mpf(1)
    if convention == "l2_sqrt_d":
        return mpmath.mpf(1), 1 / mpmath.sqrt(d)
    if convention == "l2":
        return mpmath.mpf(1), mpmath.mpf(1)
    raise ValueError(f"unknown score convention {convention!r}; expected paper, l2_sqrt_d or l2")


def depth_mix(sources: Sequence[Sequence], query: Sequence, eps, convention: str = "paper",
              gain: Sequence | None = None) -> dict:
    """One depth attention (Eqs. 2-4) in mpmath: {"scores", "alpha", "h"}; one softmax over the sources.

    s_i = t q . (g v_i) / sqrt(m ||v_i||^2 + eps), (m, t) = (1/d, 1) paper, (1, 1/sqrt(d)) l2_sqrt_d,
    (1, 1) l2 (the same forms as fidelity.oracles.depth_attention, at the working precision)."""
    with precision():
        vs = [[mp(x) for x in v] for v in sources]
        d = len(vs[0])
        q = [mp(x) for x in query]
        g = [mpmath.mpf(1)] * d if gain is None else [mp(x) for x in gain]
        e = mp(eps)
        m, t = _convention(convention, d)
        s = [t * mpmath.fsum(q[j] * g[j] * v[j] for j in range(d)) / mpmath.sqrt(m * mpmath.fsum(x * x for x in v) + e)
             for v in vs]
        top = max(s)
        w = [mpmath.exp(x - top) for x in s]
        z = mpmath.fsum(w)
        alpha = [x / z for x in w]
        h = [mpmath.fsum(alpha[i] * vs[i][j] for i in range(len(vs))) for j in range(d)]
        return {"scores": s, "alpha": alpha, "h": h}


def affine(W: Sequence[Sequence], c: Sequence):
    """A sublayer f(h) = W h + c (W [d, d], c [d]) on mpmath vectors."""
    def f(h):
        with precision():
            Wm = [[mp(x) for x in row] for row in W]
            return [mpmath.fsum(wj * hj for wj, hj in zip(row, h)) + mp(cj) for row, cj in zip(Wm, c)]
    return f


def stack_forward(h1: Sequence, sublayers: Sequence, num_blocks: int, queries: Sequence[Sequence],
                  output_query: Sequence, eps, convention: str = "paper", gains: Sequence[Sequence] | None = None,
                  output_gain: Sequence | None = None) -> dict:
    """Block AttnRes over L = len(sublayers) sublayers in N = num_blocks blocks, at one position.

    Layer l of block n attends its Eq. 6 sources (source_sets) with the pseudo-query queries[l-1]
    (and gain gains[l-1]); f_l gets h_l; b_n^i = b_n^{i-1} + f_l(h_l), b_0 = h1. The output is
    the same depth attention over every completed source [b_0, b_1, ..., b_N] with output_query
    (and output_gain): the reference's tier-c output (fidelity.impl.torch.attnres).
    Returns {"h": [L][d] (each sublayer's input), "y": [L][d] (its output), "blocks": [N][d] (b_1..b_N),
    "out": [d]}, mpmath values."""
    L = len(sublayers)
    blocks = block_partition(L, num_blocks)
    with precision():
        b0 = [mp(x) for x in h1]
        d = len(b0)
        completed = [b0]
        hs, ys, sums = [None] * L, [None] * L, []
        for members in blocks:
            partial = [mpmath.mpf(0)] * d
            for i, layer in enumerate(members, start=1):
                sources = list(completed) + ([partial] if i >= 2 else [])
                g = None if gains is None else gains[layer - 1]
                h = depth_mix(sources, queries[layer - 1], eps, convention, g)["h"]
                y = [mp(x) for x in sublayers[layer - 1](h)]
                hs[layer - 1], ys[layer - 1] = h, y
                partial = [a + b for a, b in zip(partial, y)]
            completed.append(partial)
            sums.append(partial)
        out = depth_mix(completed, output_query, eps, convention, output_gain)["h"]
        return {"h": hs, "y": ys, "blocks": sums, "out": out}
