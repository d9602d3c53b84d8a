"""Stateless by contract: one call, repeated, gives the same bits, however often the object is reused.

An iteration counter that is never reset, a cache keyed on the wrong thing, or a buffer updated
in forward makes a reused object drift; gates that build a fresh object per case never see it.
`assert_same_bits_every_call` calls one closure (which holds the object) `calls` times and
compares every result with the first, bit for bit (NaN equal to NaN in the same place).
"""
from __future__ import annotations

from typing import Callable

import torch

from fidelity.gates.compare import assert_bound
from fidelity.gates.tensors import floating_tensors

REUSE_CALLS = 1001
"""How many calls a reused object must survive (issue: 'more than 1000')."""


def _same_bits(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype and torch.equal(x.isnan(), y.isnan())
                                    and torch.equal(torch.nan_to_num(x), torch.nan_to_num(y)) for x, y in zip(a, b))


def assert_same_bits_every_call(call: Callable[[], object], *, what: str, calls: int = REUSE_CALLS) -> int:
    """Every one of `calls` results equals the first bit for bit; the reading `calls_that_differ` counts the others.

    The message names the first call that differed (2 = the same call twice)."""
    with torch.no_grad():
        first = [t.detach().clone() for t in floating_tensors(call())]
        if not first:
            raise ValueError(f"{what}: the call returned no floating tensor to compare")
        differ, first_differing = 0, None
        for k in range(2, calls + 1):
            if not _same_bits(first, [t.detach() for t in floating_tensors(call())]):
                differ += 1
                first_differing = first_differing or k
    return assert_bound(differ, at_most=0, reading_name="calls_that_differ",
                        what=f"{what}: of {calls} calls on one object, {differ} differ from the first "
                             f"(first at call {first_differing})")
