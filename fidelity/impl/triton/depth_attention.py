"""Fused AttnRes depth attention (arXiv:2603.15031, Eqs. 2-4; §3.1; Table 5 fn 2), Triton.

One pseudo-query q [d] attends, at every position r, over the L sources v_0..v_{L-1}
(sources [L, ..., d], the source axis first). Keys are normalised, values are raw, ONE
softmax over the sources:

    s_i   = scale * (q . (g * v_i)) * (m * ||v_i||^2 + eps)^(-1/2)
    alpha = softmax_i(s_i)
    h     = sum_i alpha_i v_i

with (m, scale) the score convention: "paper" (1/d, 1), "l2_sqrt_d" (1, d^-1/2), "l2" (1, 1).
The same formula, convention for convention, as fidelity/impl/torch/depth_attention.py.

Forward kernel: one program takes BLOCK_R positions and all L <= BLOCK_L sources; it walks
d in blocks of BLOCK_D twice: first accumulating q.(g v_i) and ||v_i||^2, then (after the
softmax) h. It writes h, alpha, and the two [L, R] score terms the backward needs.

Backward kernel ("manual", the only route), per position:

    dalpha_i = v_i . dh + dalpha_out_i                          (adjoint of Eq. 4)
    ds_i     = alpha_i (dalpha_i - sum_k alpha_k dalpha_k)      (softmax adjoint)
    dv_i     = alpha_i dh + ds_i ds_i/dv_i,
    ds_i/dv_i = scale * (q g inv_i - m v_i (q.(g v_i)) inv_i^3), inv_i = (m ||v_i||^2 + eps)^(-1/2)

The norm's factor m is 1/d under the paper's mean norm and 1 under L2: dropping it is
invisible under L2 (integration record 000, §3), so every convention is tested.
dq and dg need sum over positions and sources of ds_i scale inv_i v_i: each program adds
its positions into its own row of a [P, d] partial buffer (no atomics, so the result is
bit-reproducible) and a small reduction kernel sums the P rows in a fixed order.

The constants (m, scale, eps) reach the kernels as a 3-element tensor in the compute dtype:
a Python float kernel argument would be passed as float32 and round 1/3 for float64.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS, check_depth_attention_inputs
from fidelity.mechanisms.refusal import NotRun

from ._common import INTERPRETED, check_runnable, device_function, div_, exp_, launch, max_, next_pow2, sqrt_, sum_

BACKWARD_ROUTES = ("manual",)

TILE_ELEMENTS = 16384 if INTERPRETED else 4096  # of one program's [BLOCK_R, BLOCK_L, BLOCK_D] tile
BLOCK_D_MAX = 512 if INTERPRETED else 128
PROGRAMS_PER_SM = 4  # backward grid: at most this many programs per SM (4 on the interpreter)
NUM_WARPS = 8


def convention_constants(convention: str, d: int) -> tuple[float, float]:
    """Return (m, scale) of a score convention for key width d.

    The reference has the same table; this copy is deliberate: the kernels' subject must not read
    the reference's convention math, or a perturbation of the reference (P6, P7 edit its table)
    would change the kernels too, while the runner runs only the reference's gate instances."""
    if convention == "paper":
        return 1.0 / d, 1.0  # attnres.eq2: q^T RMSNorm(k), mean form (m = 1/d), no temperature
    if convention == "l2_sqrt_d":
        return 1.0, d ** -0.5  # L2 norm (m = 1) with a 1/sqrt(d) temperature
    if convention == "l2":
        return 1.0, 1.0  # L2 norm (m = 1), no temperature
    raise ValueError(f"unknown score convention {convention!r}; expected one of {SCORE_CONVENTIONS}")


@device_function
def _rows(block, L, R, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    """Offsets into an [L, R] array of one block of BLOCK_R positions x BLOCK_L sources, as
    [BLOCK_R, BLOCK_L, 1] tensors (positions, sources, the d axis kept for broadcasting)."""
    r = block * BLOCK_R + tl.arange(0, BLOCK_R)
    l = tl.arange(0, BLOCK_L)
    r3 = r[:, None, None].to(tl.int64)
    l3 = l[None, :, None].to(tl.int64)
    return l3 * R + r3, (r3 < R) & (l3 < L), r3


@triton.jit(do_not_specialize=["L", "R", "D"])  # one build per block shape, gain and dtype
def _depth_fwd_kernel(v_ptr, q_ptr, g_ptr, c_ptr, h_ptr, alpha_ptr, qgv_ptr, inv_ptr, L, R, D,
                      HAS_GAIN: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr,
                      BLOCK_D: tl.constexpr):
    lr, ok, r3 = _rows(tl.program_id(0), L, R, BLOCK_R, BLOCK_L)  # [BLOCK_R, BLOCK_L, 1]
    m = tl.load(c_ptr)
    scale = tl.load(c_ptr + 1)
    eps = tl.load(c_ptr + 2)
    qgv = tl.zeros([BLOCK_R, BLOCK_L, 1], dtype=v_ptr.dtype.element_ty)
    sumsq = tl.zeros([BLOCK_R, BLOCK_L, 1], dtype=v_ptr.dtype.element_ty)
    for d0 in range(0, D, BLOCK_D):
        dd = d0 + tl.arange(0, BLOCK_D)[None, None, :]
        v = tl.load(v_ptr + lr * D + dd, mask=ok & (dd < D), other=0.0)
        qg = tl.load(q_ptr + dd, mask=dd < D, other=0.0)
        if HAS_GAIN:
            qg = qg * tl.load(g_ptr + dd, mask=dd < D, other=0.0)  # RMSNorm's gain folded into q . (g v)
        qgv += sum_(v * qg, 2)  # attnres.eq2: q . (g v_i)
        sumsq += sum_(v * v, 2)  # ||v_i||^2
    one = tl.full([BLOCK_R, BLOCK_L, 1], 1.0, dtype=v_ptr.dtype.element_ty)
    inv = div_(one, sqrt_(m * sumsq + eps))  # attnres.eq2: key norm 1/sqrt(m ||v_i||^2 + eps)
    score = scale * qgv * inv  # attnres.eq2: s_i = scale * q . (g v_i) / sqrt(m ||v_i||^2 + eps)
    score = tl.where(ok, score, float("-inf"))
    e = exp_(score - max_(score, 1))
    alpha = div_(e, sum_(e, 1))  # attnres.eq2: ONE softmax over the sources (axis 1)
    tl.store(alpha_ptr + lr, alpha, mask=ok)
    tl.store(qgv_ptr + lr, qgv, mask=ok)
    tl.store(inv_ptr + lr, inv, mask=ok)
    for d0 in range(0, D, BLOCK_D):
        dd = d0 + tl.arange(0, BLOCK_D)[None, None, :]
        v = tl.load(v_ptr + lr * D + dd, mask=ok & (dd < D), other=0.0)
        h = sum_(alpha * v, 1)  # attnres.eq4: h = sum_i alpha_i v_i (values raw)   [BLOCK_R, 1, BLOCK_D]
        tl.store(h_ptr + r3 * D + dd, h, mask=(r3 < R) & (dd < D))


@triton.jit(do_not_specialize=["L", "R", "D"])
def _depth_bwd_kernel(v_ptr, q_ptr, g_ptr, c_ptr, alpha_ptr, qgv_ptr, inv_ptr, dh_ptr, dalpha_ptr,
                      dv_ptr, part_ptr, L, R, D,
                      HAS_GAIN: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr,
                      BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    m_factor = tl.load(c_ptr)
    scale = tl.load(c_ptr + 1)
    part_row = part_ptr + pid.to(tl.int64) * D
    for d0 in range(0, D, BLOCK_D):  # this program's partial sum of ds_i inv_i v_i starts at zero
        dd = d0 + tl.arange(0, BLOCK_D)
        tl.store(part_row + dd, tl.zeros([BLOCK_D], dtype=v_ptr.dtype.element_ty), mask=dd < D)
    tl.debug_barrier()  # the row is read back below, possibly by other threads of this program
    for block in range(pid, tl.cdiv(R, BLOCK_R), tl.num_programs(0)):
        lr, ok, r3 = _rows(block, L, R, BLOCK_R, BLOCK_L)  # [BLOCK_R, BLOCK_L, 1]
        alpha = tl.load(alpha_ptr + lr, mask=ok, other=0.0)
        qgv = tl.load(qgv_ptr + lr, mask=ok, other=0.0)
        inv = tl.load(inv_ptr + lr, mask=ok, other=0.0)
        dalpha = tl.load(dalpha_ptr + lr, mask=ok, other=0.0)
        for d0 in range(0, D, BLOCK_D):
            dd = d0 + tl.arange(0, BLOCK_D)[None, None, :]
            v = tl.load(v_ptr + lr * D + dd, mask=ok & (dd < D), other=0.0)
            dh = tl.load(dh_ptr + r3 * D + dd, mask=(r3 < R) & (dd < D), other=0.0)
            dalpha += sum_(v * dh, 2)  # adjoint of eq4: dL/dalpha_i = v_i . dh (+ alpha's own cotangent)
        ds = alpha * (dalpha - sum_(alpha * dalpha, 1))  # softmax adjoint over the sources (axis 1)
        qgv_inv3 = qgv * inv * inv * inv
        for d0 in range(0, D, BLOCK_D):
            dd = d0 + tl.arange(0, BLOCK_D)[None, None, :]
            v = tl.load(v_ptr + lr * D + dd, mask=ok & (dd < D), other=0.0)
            dh = tl.load(dh_ptr + r3 * D + dd, mask=(r3 < R) & (dd < D), other=0.0)
            qg = tl.load(q_ptr + dd, mask=dd < D, other=0.0)
            if HAS_GAIN:
                qg = qg * tl.load(g_ptr + dd, mask=dd < D, other=0.0)
            ds_dv = scale * (qg * inv - m_factor * v * qgv_inv3)  # ds_i/dv_i: the norm's factor m
            dv = alpha * dh + ds * ds_dv  # value path alpha_i dh + key path ds_i ds_i/dv_i
            tl.store(dv_ptr + lr * D + dd, dv, mask=ok & (dd < D))
            key_sum = sum_(sum_(ds * inv * v, 1), 0)  # sum over positions and sources of ds_i inv_i v_i
            d_row = dd.reshape(BLOCK_D)
            tl.store(part_row + d_row, tl.load(part_row + d_row, mask=d_row < D, other=0.0) + key_sum.reshape(BLOCK_D),
                     mask=d_row < D)
            tl.debug_barrier()  # this program's own read-modify-write: stores visible before the next read


@triton.jit(do_not_specialize=["P", "D"])
def _depth_reduce_kernel(part_ptr, q_ptr, g_ptr, c_ptr, dq_ptr, dg_ptr, P, D,
                         HAS_GAIN: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_D: tl.constexpr):
    dd = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)[None, :]
    acc = tl.zeros([1, BLOCK_D], dtype=part_ptr.dtype.element_ty)
    for p0 in range(0, P, BLOCK_P):
        p = p0 + tl.arange(0, BLOCK_P)[:, None]
        acc += sum_(tl.load(part_ptr + p.to(tl.int64) * D + dd, mask=(p < P) & (dd < D), other=0.0), 0)
    dqg = tl.load(c_ptr + 1) * acc  # ds/d(q g)_j = sum_i ds_i scale inv_i v_ij
    if HAS_GAIN:
        q = tl.load(q_ptr + dd, mask=dd < D, other=0.0)
        g = tl.load(g_ptr + dd, mask=dd < D, other=0.0)
        tl.store(dq_ptr + dd, dqg * g, mask=dd < D)  # ds/dq_j = scale g_j v_ij inv_i
        tl.store(dg_ptr + dd, dqg * q, mask=dd < D)  # ds/dg_j = scale q_j v_ij inv_i
    else:
        tl.store(dq_ptr + dd, dqg, mask=dd < D)


_CONSTANTS: dict[tuple, torch.Tensor] = {}


def _constants(m: float, scale: float, eps: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(m, scale, eps) as a tensor in the compute dtype, cached so a GPU call copies nothing."""
    key = (m, scale, eps, dtype, str(device))
    if key not in _CONSTANTS:
        _CONSTANTS[key] = torch.tensor([m, scale, eps], dtype=dtype, device=device)
    return _CONSTANTS[key]


def _blocks(L: int, R: int, D: int) -> tuple[int, int, int]:
    """(BLOCK_R, BLOCK_L, BLOCK_D). Compiled, they depend on L only (fewer builds: a narrow d is
    masked); the interpreter shrinks them to the d and positions there are (its cost is per
    element of the tile)."""
    block_l = next_pow2(L)
    block_d = BLOCK_D_MAX
    block_r = max(1, TILE_ELEMENTS // (block_l * block_d))
    if INTERPRETED:
        block_d = min(next_pow2(D), BLOCK_D_MAX)
        block_r = max(1, min(TILE_ELEMENTS // (block_l * block_d), next_pow2(R)))
    return block_r, block_l, block_d


def _max_programs(device: torch.device) -> int:
    if device.type == "cuda" and not INTERPRETED:
        return PROGRAMS_PER_SM * torch.cuda.get_device_properties(device).multi_processor_count
    return PROGRAMS_PER_SM


class _DepthAttendFused(torch.autograd.Function):
    """The fused forward kernel with the fused backward kernels (dv; then dq, dg)."""

    @staticmethod
    def forward(ctx, sources, query, gain, m, scale, eps):
        L, d = sources.shape[0], sources.shape[-1]
        v = sources.reshape(L, -1, d).contiguous()
        R = v.shape[1]
        q = query.contiguous()
        g = q if gain is None else gain.contiguous()
        consts = _constants(m, scale, eps, v.dtype, v.device)
        h = v.new_empty((R, d))
        alpha, qgv, inv = (v.new_empty((L, R)) for _ in range(3))
        block_r, block_l, block_d = _blocks(L, R, d)
        launch(_depth_fwd_kernel, (triton.cdiv(R, block_r),), v, q, g, consts, h, alpha, qgv, inv, L, R, d,
               HAS_GAIN=gain is not None, BLOCK_R=block_r, BLOCK_L=block_l, BLOCK_D=block_d, num_warps=NUM_WARPS)
        ctx.save_for_backward(v, q, g, consts, alpha, qgv, inv)
        ctx.has_gain = gain is not None
        ctx.shapes = (sources.shape, query.shape)
        return h.view(sources.shape[1:]), alpha.view(sources.shape[:-1])

    @staticmethod
    @once_differentiable
    def backward(ctx, dh, dalpha_out):
        v, q, g, consts, alpha, qgv, inv = ctx.saved_tensors
        L, R, d = v.shape
        dh = (torch.zeros((R, d), dtype=v.dtype, device=v.device) if dh is None
              else dh.reshape(R, d).contiguous())
        dalpha = (torch.zeros((L, R), dtype=v.dtype, device=v.device) if dalpha_out is None
                  else dalpha_out.reshape(L, R).contiguous())
        block_r, block_l, block_d = _blocks(L, R, d)
        programs = max(1, min(triton.cdiv(R, block_r), _max_programs(v.device)))
        dv = torch.empty_like(v)
        partial = v.new_empty((programs, d))
        launch(_depth_bwd_kernel, (programs,), v, q, g, consts, alpha, qgv, inv, dh, dalpha, dv, partial, L, R, d,
               HAS_GAIN=ctx.has_gain, BLOCK_R=block_r, BLOCK_L=block_l, BLOCK_D=block_d, num_warps=NUM_WARPS)
        dq = torch.empty_like(q)
        dg = torch.empty_like(q) if ctx.has_gain else dq
        block_p, red_d = (min(next_pow2(programs), 64), min(next_pow2(d), 128)) if INTERPRETED else (64, 128)
        launch(_depth_reduce_kernel, (triton.cdiv(d, red_d),), partial, q, g, consts, dq, dg, programs, d,
               HAS_GAIN=ctx.has_gain, BLOCK_P=block_p, BLOCK_D=red_d, num_warps=4)
        sources_shape, _ = ctx.shapes
        return dv.view(sources_shape), dq, (dg if ctx.has_gain else None), None, None, None


def depth_attend(
    sources: torch.Tensor,
    query: torch.Tensor,
    *,
    convention: str = "paper",
    eps: float = 1e-6,
    gain: torch.Tensor | None = None,
    backward: str = "manual",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (h [..., d], alpha [L, ...]) for sources [L, ..., d] and a pseudo-query [d], fused."""
    d = check_depth_attention_inputs(sources, query, gain)
    m, scale = convention_constants(convention, d)
    if backward == "autograd":
        raise NotRun("the Triton depth attention has no 'autograd' route (torch cannot differentiate "
                     "a kernel); its gradient is the hand-written backward kernel, backward='manual'")
    if backward != "manual":
        raise ValueError(f"unknown backward route {backward!r}; expected one of {BACKWARD_ROUTES}")
    check_runnable(sources, query, gain)
    for name, t in (("query", query), ("gain", gain)):
        if t is not None and t.device != sources.device:
            raise ValueError(f"{name} is on {t.device}, sources on {sources.device}")
    if sources.numel() == 0:
        raise ValueError(f"sources must be non-empty, got shape {tuple(sources.shape)}")
    return _DepthAttendFused.apply(sources, query, gain, m, scale, float(eps))
