"""Fused Sinkhorn-Knopp projection in the log domain (mHC, arXiv:2512.24880, Eq. 9), Triton.

    M(0) = exp(H~res);  M(t) = T_r(T_c(M(t-1)));  H_res = M(t_max),  t_max = 20

The same iteration as fidelity/impl/torch/sinkhorn.py, step for step: the iterate is held
as log M, a column normalisation T_c is x - logsumexp(x, over rows i), then a row
normalisation T_r is x - logsumexp(x, over columns j). Nothing is floored or clamped: a
tiny sum stays tiny, a huge logit never reaches exp before its max is subtracted.

One program holds BLOCK_B whole matrices [BLOCK_B, BLOCK_N, BLOCK_N] in registers for all
2 t_max steps (n <= 16 here: one mHC H_res per token), so a call is one launch that reads
the logits once and writes M(t_max) once (and, when a gradient is wanted, the log-states).
n below BLOCK_N is padded with an independent filler block (see `_tile`), never masked
inside the iteration.

Backward ("manual", the only route: torch cannot differentiate through a kernel): the
unrolled adjoint, as in the reference. For a step y = x - logsumexp(x, axis),
dx = dy - softmax(x, axis) * sum(dy, axis), and softmax(x, axis) = exp(y). With gradients
wanted, the forward also stores the log-iterate after each row pass, log M(t) for
t = 1..t_max ([t_max, B, n, n]: t_max times the logits, half of what storing both passes
would take). The backward kernel walks t down and reads each state once: log M(t) is the
output of iteration t's row pass, and iteration t's column-pass output is recomputed from
log M(t-1) by the same `_normalise` the forward ran.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from fidelity.mechanisms.refusal import NotRun

from ._common import INTERPRETED, check_runnable, device_function, exp_, launch, log_, max_, next_pow2, sum_

BACKWARD_ROUTES = ("manual",)

# Elements of one program's tile (BLOCK_B matrices of BLOCK_N x BLOCK_N). The interpreter runs
# one program at a time, so it gets bigger tiles (fewer programs); a GPU gets register-sized ones.
TILE_ELEMENTS = 16384 if INTERPRETED else 2048
NUM_WARPS = 4


@device_function
def _tile(B, N, BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr):
    """This program's [BLOCK_B, BLOCK_N, BLOCK_N] tile of a [B, N, N] array: offsets, validity, and
    the log-domain value of the padding lanes.

    Padding (n < BLOCK_N, or matrices past B) is a second, independent problem in the same
    tile: log M is -inf between the real n x n block and the filler block (exp(-inf) = 0, so
    neither block sees the other in any sum) and 0 inside the filler block. Every row and
    column of the tile then holds a finite entry, so no logsumexp meets an all -inf slice and
    the steps need no masking: the real block is projected exactly as if it were alone.
    """
    mat = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    i = tl.arange(0, BLOCK_N)  # row index (dim -2)
    j = tl.arange(0, BLOCK_N)  # column index (dim -1)
    mat3 = mat[:, None, None].to(tl.int64)
    i3 = i[None, :, None]
    j3 = j[None, None, :]
    offs = mat3 * N * N + i3 * N + j3
    valid = (mat3 < B) & (i3 < N) & (j3 < N)
    filler = tl.where(((i3 >= N) & (j3 >= N)) | (mat3 >= B), 0.0, float("-inf"))
    return offs, valid, filler


@device_function
def _normalise(x, AXIS: tl.constexpr):
    """One log-domain normalisation along AXIS: x - logsumexp(x, AXIS), the max subtracted first."""
    mx = max_(x, AXIS)
    return x - (mx + log_(sum_(exp_(x - mx), AXIS)))


@triton.jit(do_not_specialize=["B", "N", "T_MAX"])  # one build per block shape and dtype
def _sinkhorn_fwd_kernel(x_ptr, out_ptr, states_ptr, B, N, T_MAX,
                         BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, STORE_STATES: tl.constexpr):
    offs, valid, filler = _tile(B, N, BLOCK_B, BLOCK_N)
    state_ptrs = states_ptr + offs
    state_stride = B.to(tl.int64) * N * N
    x = tl.load(x_ptr + offs, mask=valid, other=filler)  # mhc.eq9: M(0) = exp(H~res), held as log M(0)
    for t in range(T_MAX):
        x = _normalise(x, 1)  # mhc.eq9: T_c first: every column (a sum over rows i, axis 1) sums to 1
        x = _normalise(x, 2)  # mhc.eq9: then T_r: every row (a sum over columns j, axis 2) sums to 1
        if STORE_STATES:
            tl.store(state_ptrs + t * state_stride, x, mask=valid)  # log M(t + 1), for the backward
    tl.store(out_ptr + offs, exp_(x), mask=valid)  # mhc.eq9: H_res = M(t_max)


@triton.jit(do_not_specialize=["B", "N", "T_MAX"])
def _sinkhorn_bwd_kernel(x_ptr, out_ptr, states_ptr, gout_ptr, gin_ptr, B, N, T_MAX,
                         BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr):
    offs, valid, filler = _tile(B, N, BLOCK_B, BLOCK_N)
    state_ptrs = states_ptr + offs
    state_stride = B.to(tl.int64) * N * N
    g = tl.load(gout_ptr + offs, mask=valid, other=0.0) * tl.load(out_ptr + offs, mask=valid, other=0.0)  # adjoint of exp
    # log M(t_max); with t_max = 0 the loop never runs and the (allocated, unused) first state is read
    y_row = tl.load(state_ptrs + tl.maximum(T_MAX - 1, 0) * state_stride, mask=valid, other=filler)
    for k in range(T_MAX):
        t = T_MAX - 1 - k  # iteration t + 1 of the forward, walked backwards
        g = g - exp_(y_row) * sum_(g, 2)  # adjoint of T_r: softmax over j is exp(y), dx = dy - exp(y) sum_j dy
        if t > 0:
            prev = tl.load(state_ptrs + (t - 1) * state_stride, mask=valid, other=filler)  # log M(t)
        else:
            prev = tl.load(x_ptr + offs, mask=valid, other=filler)  # log M(0) = H~res
        y_col = _normalise(prev, 1)  # the forward's column pass, recomputed from log M(t)
        g = g - exp_(y_col) * sum_(g, 1)  # adjoint of T_c: softmax over i is exp(y), dx = dy - exp(y) sum_i dy
        y_row = prev
    tl.store(gin_ptr + offs, g, mask=valid)


def _config(B: int, n: int) -> tuple[int, int, tuple[int]]:
    """(BLOCK_B, BLOCK_N, grid). Compiled, BLOCK_B depends on n only (one build per n and dtype);
    the interpreter shrinks it to the batch (its cost is per element of the tile)."""
    block_n = next_pow2(n)
    block_b = max(1, TILE_ELEMENTS // (block_n * block_n))
    if INTERPRETED:
        block_b = min(block_b, next_pow2(B))
    return block_b, block_n, (triton.cdiv(B, block_b),)


def _forward(x: torch.Tensor, t_max: int, store_states: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """x [B, n, n] contiguous -> (M(t_max) [B, n, n], log-states [t_max, B, n, n] or an empty tensor)."""
    B, n, _ = x.shape
    out = torch.empty_like(x)
    states = x.new_empty((max(t_max, 1), B, n, n)) if store_states else x.new_empty((1,))  # never empty: see the backward
    block_b, block_n, grid = _config(B, n)
    launch(_sinkhorn_fwd_kernel, grid, x, out, states, B, n, t_max,
           BLOCK_B=block_b, BLOCK_N=block_n, STORE_STATES=store_states, num_warps=NUM_WARPS)
    return out, states


class _SinkhornFused(torch.autograd.Function):
    """The fused forward kernel with the fused unrolled-adjoint kernel as its backward."""

    @staticmethod
    def forward(ctx, logits, t_max):
        shape = logits.shape
        n = shape[-1]
        x = logits.reshape(-1, n, n).contiguous()
        out, states = _forward(x, t_max, store_states=bool(ctx.needs_input_grad[0]))
        ctx.t_max = t_max
        ctx.save_for_backward(x, out, states)
        return out.view(shape)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, out, states = ctx.saved_tensors
        B, n, _ = x.shape
        gout = grad_out.reshape(B, n, n).contiguous()
        gin = torch.empty_like(x)
        block_b, block_n, grid = _config(B, n)
        launch(_sinkhorn_bwd_kernel, grid, x, out, states, gout, gin, B, n, ctx.t_max,
               BLOCK_B=block_b, BLOCK_N=block_n, num_warps=NUM_WARPS)
        return gin.view(grad_out.shape), None


def sinkhorn(logits: torch.Tensor, *, t_max: int = 20, backward: str = "manual") -> torch.Tensor:
    """Eq. 9 on logits [..., n, n] = H~res: return M(t_max), fused; gradients via the backward kernel."""
    if logits.dim() < 2 or logits.shape[-1] != logits.shape[-2]:
        raise ValueError(f"logits must be [..., n, n], got shape {tuple(logits.shape)}")
    if t_max < 0:
        raise ValueError(f"t_max must be >= 0, got {t_max}")
    if backward == "autograd":
        raise NotRun("the Triton sinkhorn has no 'autograd' route (torch cannot differentiate a "
                     "kernel); its gradient is the hand-written backward kernel, backward='manual'")
    if backward != "manual":
        raise ValueError(f"unknown backward route {backward!r}; expected one of {BACKWARD_ROUTES}")
    check_runnable(logits)
    if logits.numel() == 0:
        return torch.exp(logits)  # no matrix to project
    return _SinkhornFused.apply(logits, int(t_max))
