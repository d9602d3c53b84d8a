"""The kernel gates' bound: a fused kernel held to the PyTorch reference's own error.

On the same inputs, in the same dtype and on the same device (flash-attention style,
README, Design: tolerance policy):

    err(kernel) <= KERNEL_MULTIPLE * err(reference) + FLOOR_EPS * eps(dtype)

KERNEL_MULTIPLE = 2: a fused kernel may round differently (sum order, exp/log library),
not worse by more than a factor 2. FLOOR_EPS = 16: where the reference happens to be exact a
kernel may still be a few ulp off. Each gate file says what its err is measured against.
"""
from __future__ import annotations

from typing import Callable

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import assert_bound

KERNEL_MULTIPLE = 2.0
FLOOR_EPS = 16.0


def kernel_of(subject, mechanism: str) -> Callable:
    """The subject's hand-written ("manual") route for `mechanism`; skips the torch reference itself
    (what the kernels are measured against) and subjects without a manual route."""
    if subject.name == "torch":
        pytest.skip("the kernel gates measure a subject against the torch reference; the reference is not held to itself")
    if not subject.supports(mechanism, "manual"):
        pytest.skip(f"subject {subject.name} has no 'manual' backward for {mechanism}")
    fn = subject.get(mechanism)
    return lambda *args, **kw: fn(*args, backward="manual", **kw)


def assert_kernel_bounded(err_kernel: float, err_reference: float, dtype: torch.dtype, *, what: str, name: str) -> float:
    """assert err_kernel <= KERNEL_MULTIPLE * err_reference + FLOOR_EPS * eps(dtype); both kept as readings."""
    eps = torch.finfo(dtype).eps
    readings.record(err_reference, f"{name}.reference")
    readings.record(err_kernel, f"{name}.kernel")
    bound = KERNEL_MULTIPLE * err_reference + FLOOR_EPS * eps
    return assert_bound(err_kernel, at_most=bound,
                        what=f"{what}: kernel error {err_kernel / eps:.3g} eps against {KERNEL_MULTIPLE:g} x the "
                             f"reference's {err_reference / eps:.3g} eps + {FLOOR_EPS:g} eps")
