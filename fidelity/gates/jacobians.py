"""Full Jacobians from batched calls, for gates that compare a backward with central differences.

A subject whose function takes a leading batch of independent inputs ([B, *shape] -> [B, *out])
gives every row of its Jacobian from ONE backward (one copy of the input per output element,
a basis cotangent on each) and every central difference from ONE forward (the 2 N shifted
inputs stacked). Under the Triton CPU interpreter each call is a kernel launch of tens of
milliseconds, so this replaces thousands of launches by two; on a GPU it is simply faster.

The comparison is torch.autograd.gradcheck's own criterion, element by element:
|analytic - numeric| <= atol + rtol |numeric|; the reading is the worst ratio of the two
sides (<= 1 passes), so a gate records how close it came, not only a verdict.
"""
from __future__ import annotations

from typing import Callable

import torch

from fidelity.gates.compare import assert_bound


def jacobian_by_backward(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """J[*out_shape, *in_shape] = d fn(x)[out] / d x[in], by fn's own backward, in one batched call."""
    out_shape = fn(x.detach().unsqueeze(0)).shape[1:]  # one forward to learn the output's shape
    n_out = out_shape.numel()
    copies = x.detach().unsqueeze(0).expand(n_out, *x.shape).clone().requires_grad_(True)
    basis = torch.eye(n_out, dtype=x.dtype, device=x.device).reshape(n_out, *out_shape)
    out = fn(copies)
    if out.requires_grad:
        out.backward(basis)
    # no graph back to x (a detached output), or no path from it: by its backward, fn does not depend
    # on x, and that zero Jacobian is what the comparison with central differences must refute
    grad = copies.grad if copies.grad is not None else torch.zeros_like(copies)
    return grad.reshape(*out_shape, *x.shape)


def jacobian_by_central_differences(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                                    step: float) -> torch.Tensor:
    """J_fd[*out_shape, *in_shape] = (fn(x + h e_k) - fn(x - h e_k)) / 2h, all 2 N forwards in one call."""
    n_in = x.numel()
    steps = (torch.eye(n_in, dtype=x.dtype, device=x.device) * step).reshape(n_in, *x.shape)
    with torch.no_grad():
        out = fn(torch.cat([x.detach() + steps, x.detach() - steps]))
    diff = (out[:n_in] - out[n_in:]) / (2 * step)  # [k, *out_shape]
    out_shape = diff.shape[1:]
    return diff.reshape(n_in, -1).T.reshape(*out_shape, *x.shape)


def assert_gradcheck_criterion(analytic: torch.Tensor, numeric: torch.Tensor, *, atol: float, rtol: float,
                               what: str, reading_name: str = "reading") -> float:
    """Every element within gradcheck's atol + rtol |numeric|; records and returns the worst ratio."""
    if analytic.shape != numeric.shape:
        raise ValueError(f"{what}: Jacobian shapes {tuple(analytic.shape)} and {tuple(numeric.shape)} differ")
    a, n = analytic.detach().double().cpu(), numeric.detach().double().cpu()
    ratio = (a - n).abs() / (atol + rtol * n.abs())
    ratio = torch.where(torch.isfinite(a), ratio, torch.full_like(ratio, float("inf")))
    worst = float(ratio.max()) if ratio.numel() else 0.0
    return assert_bound(worst, at_most=1.0, reading_name=reading_name,
                        what=f"{what}: worst |analytic - numeric| / (atol {atol:g} + rtol {rtol:g} |numeric|)")
