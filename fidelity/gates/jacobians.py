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


DIRECTIONS_PER_TENSOR = 2
"""Seeded random directions along which each tensor's central differences are taken (see
assert_gradcheck_every_tensor)."""


def central_differences_along(forward: Callable[[], object], t: torch.Tensor, direction: torch.Tensor,
                              step: float) -> torch.Tensor:
    """(forward(t + step u) - forward(t - step u)) / 2 step, flattened: the derivative along u by two forwards,
    t shifted in place and restored after."""
    view = t.detach()
    keep = view.clone()
    with torch.no_grad():
        view.copy_(keep + step * direction)
        up = _flat_output(forward)
        view.copy_(keep - step * direction)
        down = _flat_output(forward)
        view.copy_(keep)
    return (up - down) / (2 * step)


def _directions(t: torch.Tensor, seed: int) -> list[torch.Tensor]:
    """DIRECTIONS_PER_TENSOR unit vectors shaped like t, normal draws from a generator of their own (the gate's
    RNG and the subject's are left alone, and the draw is the same in every run)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(DIRECTIONS_PER_TENSOR):
        u = torch.randn(t.shape, generator=g, dtype=torch.float64)
        out.append((u / u.norm()).to(dtype=t.dtype, device=t.device))
    return out


def assert_gradcheck_every_tensor(forward: Callable[[], object], tensors: dict[str, torch.Tensor], *, step: float,
                                  atol: float, rtol: float, what: str) -> float:
    """The backward against central differences, for the input and every parameter in `tensors`.

    The backward gives each tensor's full Jacobian J (one backward per output element, every tensor at once);
    the differences are taken along DIRECTIONS_PER_TENSOR seeded random unit directions u per tensor (four
    forwards, not two per element), and every output element of J u is held to gradcheck's criterion,
    |J u - numeric| <= atol sum|u| + rtol |numeric| (atol sum|u| bounds the sum of per-element atols, as in
    torch.autograd.gradcheck's fast mode). A backward wrong in any element differs along almost every
    direction: a detached path, a dropped term or a wrong sign does along both. The reading is the worst
    ratio of all; the message names the tensor it came from.

    `forward` computes the output from `tensors` (name -> leaf with requires_grad: the input and every
    parameter); `step` is the central differences' step h (in the tensors' units); `atol` and `rtol` are
    gradcheck's. Run it in float64: in float32 the differences' rounding swamps any useful bound.

    >>> import torch
    >>> from fidelity.gates.jacobians import assert_gradcheck_every_tensor
    >>> linear = torch.nn.Linear(3, 2, dtype=torch.float64)
    >>> x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    >>> worst = assert_gradcheck_every_tensor(lambda: torch.tanh(linear(x)), {"x": x, **dict(linear.named_parameters())},
    ...                                       step=1e-6, atol=1e-5, rtol=1e-3, what="tanh(linear(x))")
    >>> worst < 0.01  # the worst |analytic - numeric| in units of the criterion: far inside it
    True
    """
    worst_name, worst = None, 0.0
    analytic = jacobians_of_tensors(forward, tensors)
    for k, (name, t) in enumerate(tensors.items()):
        J = analytic[name].double().cpu().reshape(analytic[name].shape[0], -1)
        for u in _directions(t, seed=k):
            a = J @ u.double().cpu().reshape(-1)
            n = central_differences_along(forward, t, u, step).double().cpu()
            ratio = (a - n).abs() / (atol * float(u.double().abs().sum()) + rtol * n.abs())
            ratio = torch.where(torch.isfinite(a), ratio, torch.full_like(ratio, float("inf")))
            value = float(ratio.max()) if ratio.numel() else 0.0
            if worst_name is None or value > worst:
                worst_name, worst = name, value
    return assert_bound(worst, at_most=1.0, reading_name="reading",
                        what=f"{what}: worst |analytic - numeric| / (atol {atol:g} sum|u| + rtol {rtol:g} |numeric|) "
                             f"along {DIRECTIONS_PER_TENSOR} random directions per tensor, at {worst_name!r}")
