"""Stateless by contract: a call gives the same bits after other calls on the same object, and leaves no state behind.

An iteration counter that is never reset, a warm start from the previous call, a cache keyed on the
wrong thing or a buffer updated in forward makes a reused object's answer depend on what ran before
it; gates that build a fresh object per case never see it. `assert_stateless` calls

  A  the gate's call; its first call may set itself up (compile a kernel, fill a cache keyed on
     shapes and dtypes), so nothing is compared yet; then a snapshot S1 of the state it can touch
     (fidelity.gates.state_snapshot: the modules it holds, the implementation's modules, the RNGs);
  B  the same object on other input values of the same shapes and dtypes;
  A  again; then a snapshot S2.

Red when A's two results differ in any bit (NaN equal to NaN in the same place), when B's results
are A's bit for bit (a cache keyed on something other than the inputs' values handed B what A left),
or when S1 != S2: a counter that would change the output only after 500 calls has changed already.
The reading counts the outputs and state entries that differ (and B given A's results, if so); it
must be 0.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

import torch

from fidelity.gates.compare import assert_bound
from fidelity.gates.state_snapshot import changes, snapshot

LISTED = 12
"""Differences a message names one by one; the rest it counts."""

_SAME_WIDTH_INTEGERS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
                        torch.float64: torch.int64}


def assert_stateless(call: Callable[[], object], other: Callable[[], object], *, what: str,
                     modules: Mapping[str, torch.nn.Module] | Iterable[torch.nn.Module] = (),
                     implementation: Iterable[str] = ()) -> int:
    """A, B, A again (see the module docstring): 0 differences, or a GateFailure naming each.

    `call` is A and `other` is B, closures over one object (and its inputs); `modules` the
    torch.nn.Modules they hold, `implementation` the importable names of the implementation's
    modules (a subject's `modules[mechanism]`). Floating tensors in the results are compared,
    named by their place in the result (a dict's keys, a tuple's positions)."""
    implementation = tuple(implementation)
    modules = modules if isinstance(modules, Mapping) else tuple(modules)
    first = floating_results(call())
    if not first:
        raise ValueError(f"{what}: the call returned no floating tensor to compare")
    before = snapshot(modules=modules, implementation=implementation)
    other_results = floating_results(other())
    again = floating_results(call())
    after = snapshot(modules=modules, implementation=implementation)

    found = result_differences(first, again)
    if _identical(first, other_results):
        found.append("B (other inputs) returned A's results bit for bit: a cache keyed on something other "
                     "than the inputs' values, or B's inputs never reach the output")
    found += [f"state {path}: {was} -> {now}" for path, was, now in changes(before, after)]
    listed = "; ".join(found[:LISTED]) + (f"; and {len(found) - LISTED} more" if len(found) > LISTED else "")
    return assert_bound(len(found), at_most=0, reading_name="reading",
                        what=f"{what}: A, B (other inputs), A again on one object: "
                             f"{len(found)} difference(s){': ' + listed if found else ''}")


def floating_results(result: object, name: str = "output") -> list[tuple[str, torch.Tensor]]:
    """(name, detached copy) of every floating tensor in a result, looking into tuples, lists and dicts."""
    if isinstance(result, torch.Tensor):
        return [(name, result.detach().clone())] if result.is_floating_point() else []
    if isinstance(result, dict):
        return [t for key, value in result.items() for t in floating_results(value, f"{name}[{key!r}]")]
    if isinstance(result, (tuple, list)):
        return [t for i, value in enumerate(result) for t in floating_results(value, f"{name}[{i}]")]
    return []


def _differing(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Where x and y differ in any bit; NaN equals NaN in the same place (whatever its payload)."""
    nan_x, nan_y = x.isnan(), y.isnan()
    as_int = _SAME_WIDTH_INTEGERS.get(x.dtype)
    if as_int is None:
        values = x != y
    else:
        values = x.contiguous().view(as_int) != y.contiguous().view(as_int)  # -0.0 and 0.0 differ
    return (nan_x != nan_y) | (~nan_x & values)


def _same_layout(x: torch.Tensor, y: torch.Tensor) -> bool:
    return x.shape == y.shape and x.dtype == y.dtype and x.device == y.device


def _identical(a: list[tuple[str, torch.Tensor]], b: list[tuple[str, torch.Tensor]]) -> bool:
    return len(a) == len(b) and all(_same_layout(x, y) and not bool(_differing(x, y).any())
                                    for (_, x), (_, y) in zip(a, b))


def result_differences(first: list[tuple[str, torch.Tensor]], again: list[tuple[str, torch.Tensor]]) -> list[str]:
    found = []
    if [n for n, _ in first] != [n for n, _ in again]:
        found.append(f"{len(first)} floating tensor(s) returned, then {len(again)}")
    for (name, x), (_, y) in zip(first, again):
        if not _same_layout(x, y):
            found.append(f"{name}: {_layout(x)} then {_layout(y)}")
            continue
        mask = _differing(x, y)
        count = int(mask.sum())
        if count:
            flat = int(mask.reshape(-1).nonzero()[0])
            index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), x.shape)) if x.dim() else ()
            a, b = x.reshape(-1)[flat].item(), y.reshape(-1)[flat].item()
            found.append(f"{name} ({_layout(x)}): {count} of {x.numel()} elements differ, first at {index}: "
                         f"{a!r} then {b!r}")
    return found


def _layout(t: torch.Tensor) -> str:
    return f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)} {t.device}"
