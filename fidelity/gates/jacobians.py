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


def _flat_output(forward: Callable[[], object]) -> torch.Tensor:
    """forward()'s floating outputs, flattened and concatenated (a tuple output is one vector)."""
    from fidelity.gates.tensors import floating_tensors

    return torch.cat([o.reshape(-1) for o in floating_tensors(forward())])


def jacobian_of_tensor(forward: Callable[[], object], t: torch.Tensor) -> torch.Tensor:
    """J[out, *t.shape] = d forward()[out] / d t for a leaf t (an input or a module's parameter), by backward.

    One backward per output element: for the small modules gates build, not for kernels (there,
    jacobian_by_backward batches). A detached path gives zero, which central differences refute."""
    return jacobians_of_tensors(forward, {"t": t})["t"]


def jacobians_of_tensors(forward: Callable[[], object], tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """jacobian_of_tensor for every leaf in `tensors` from ONE forward and one backward per output element
    (each backward asks for all the leaves at once: the graph is walked once, not once per leaf)."""
    out = _flat_output(forward)
    leaves = list(tensors.values())
    rows: list[list[torch.Tensor]] = [[] for _ in leaves]
    for k in range(out.numel()):
        grads = (torch.autograd.grad(out[k], leaves, retain_graph=True, allow_unused=True) if out.requires_grad
                 else (None,) * len(leaves))
        for i, (t, grad) in enumerate(zip(leaves, grads)):
            rows[i].append(torch.zeros_like(t) if grad is None else grad)
    return {name: torch.stack(r).detach() for name, r in zip(tensors, rows)}


def central_differences_of_tensor(forward: Callable[[], object], t: torch.Tensor, step: float) -> torch.Tensor:
    """J_fd[out, *t.shape] by shifting each element of t in place by +-step (restored after)."""
    flat = t.detach().view(-1)
    columns = []
    with torch.no_grad():
        for i in range(flat.numel()):
            keep = flat[i].clone()
            flat[i] = keep + step
            up = _flat_output(forward)
            flat[i] = keep - step
            down = _flat_output(forward)
            flat[i] = keep
            columns.append((up - down) / (2 * step))
    return torch.stack(columns, dim=1).reshape(-1, *t.shape)


def assert_gradcheck_every_tensor(forward: Callable[[], object], tensors: dict[str, torch.Tensor], *, step: float,
                                  atol: float, rtol: float, what: str) -> float:
    """gradcheck's criterion for the input and every parameter in `tensors`; the reading is the worst ratio of all,
    and the message names the tensor it came from."""
    worst_name, worst = None, 0.0
    analytic = jacobians_of_tensors(forward, tensors)
    for name, t in tensors.items():
        a = analytic[name].double().cpu()
        n = central_differences_of_tensor(forward, t, step).double().cpu()
        ratio = (a - n).abs() / (atol + rtol * n.abs())
        ratio = torch.where(torch.isfinite(a), ratio, torch.full_like(ratio, float("inf")))
        value = float(ratio.max()) if ratio.numel() else 0.0
        if worst_name is None or value > worst:
            worst_name, worst = name, value
    return assert_bound(worst, at_most=1.0, reading_name="reading",
                        what=f"{what}: worst |analytic - numeric| / (atol {atol:g} + rtol {rtol:g} |numeric|), "
                             f"at {worst_name!r}")
