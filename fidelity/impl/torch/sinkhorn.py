"""Sinkhorn-Knopp projection onto the Birkhoff polytope, in the log domain (mHC, arXiv:2512.24880, Eq. 9).

    M(0) = exp(H~res);  M(t) = T_r(T_c(M(t-1)));  H_res = M(t_max),  t_max = 20

T_c normalises every column to sum 1, then T_r every row. In the log domain a
normalisation along an axis is x - logsumexp(x, axis), so nothing overflows for
large logits and no floor or clamp is needed anywhere: a tiny sum stays tiny.
The last step of each iteration is a row pass, so rows sum to 1 to rounding and
columns are the (slightly) unconverged direction.

Routes: "autograd" (torch differentiates the unrolled loop) and "manual"
(`_SinkhornManual`, the unrolled adjoint: for y = x - logsumexp(x, axis),
dx = dy - softmax(x, axis) * sum(dy, axis), and softmax(x, axis) = exp(y)).
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

BACKWARD_ROUTES = ("autograd", "manual")


def _log_sinkhorn(logits: torch.Tensor, t_max: int) -> tuple[torch.Tensor, list[tuple[torch.Tensor, int]]]:
    """Return (M(t_max), the log-iterates with the axis each was normalised along)."""
    log_m = logits  # mhc.eq9: M(0) = exp(H~res), held as log M(0) = H~res
    col, row = -2, -1  # a column sums over dim -2, a row over dim -1
    steps: list[tuple[torch.Tensor, int]] = []
    for _ in range(t_max):
        log_m = log_m - torch.logsumexp(log_m, dim=col, keepdim=True)  # mhc.eq9: T_c first, columns sum to 1
        steps.append((log_m, col))
        log_m = log_m - torch.logsumexp(log_m, dim=row, keepdim=True)  # mhc.eq9: then T_r, rows sum to 1
        steps.append((log_m, row))
    out = torch.exp(log_m)  # mhc.eq9: H_res = M(t_max)
    return out, steps


class _SinkhornManual(torch.autograd.Function):
    """Log-domain Sinkhorn-Knopp with the unrolled adjoint as its backward."""

    @staticmethod
    def forward(ctx, logits, t_max):
        out, steps = _log_sinkhorn(logits, t_max)
        ctx.axes = [axis for _, axis in steps]
        ctx.save_for_backward(out, *[y for y, _ in steps])
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        out, *ys = ctx.saved_tensors
        g = grad_out * out  # adjoint of out = exp(log M(t_max))
        for y, axis in zip(reversed(ys), reversed(ctx.axes)):
            g = g - torch.exp(y) * g.sum(dim=axis, keepdim=True)  # adjoint of y = x - logsumexp(x, axis)
        return g, None


def sinkhorn(logits: torch.Tensor, *, t_max: int = 20, backward: str = "autograd") -> torch.Tensor:
    """Eq. 9 on logits [..., n, n] = H~res: return M(t_max), doubly stochastic up to convergence."""
    if logits.dim() < 2 or logits.shape[-1] != logits.shape[-2]:
        raise ValueError(f"logits must be [..., n, n], got shape {tuple(logits.shape)}")
    if t_max < 0:
        raise ValueError(f"t_max must be >= 0, got {t_max}")
    if backward == "autograd":
        out, _ = _log_sinkhorn(logits, t_max)
        return out
    if backward == "manual":
        return _SinkhornManual.apply(logits, t_max)
    raise ValueError(f"unknown backward route {backward!r}; expected one of {BACKWARD_ROUTES}")
