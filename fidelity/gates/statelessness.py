"""Stateless by contract: a call leaves no state behind, and its result never depends on earlier calls.

An iteration counter that is never reset, a warm start from the previous call, a memo of the first
output per shape, a cache keyed on the wrong thing or a buffer updated in forward makes a reused
object's answer depend on what ran before it; gates that build a fresh object per case never see it,
and its outputs may not differ for a thousand calls. So state is read, not waited for.
`assert_stateless` takes a snapshot S0 of the state the call can touch
(fidelity.gates.state_snapshot: the modules and objects it holds, whatever package defined them, the
implementation's modules and their globals, the RNGs; infrastructure caches are not read), then calls

- B' `fresh_other`, where given: B on an object nothing else has called (a module the gate built from
  the subject's factory with the same seed as the used one; for a function subject, the function
  itself, called before the gate's other calls: a function has no object to build afresh, and its
  state lives in the modules S0 reads, so "fresh" means before this gate's calls, not before any
  call in the process: that order-free check is the snapshot's);
- A  the gate's call, on the object under test (the first call on it included);
- B  the same object on other input values of the same shapes and dtypes;
- A  again.

A snapshot follows every call. Red when A's two results differ in any bit (NaN equal to NaN in the
same place), when B's results are A's bit for bit (a memo or cache keyed on something other than the
inputs' values handed B what A left), when B on the used object differs from B' on a fresh one, or
when any state entry is not the same in every snapshot: a counter that would change the output only
after 1000 iterations has changed already, a cache the first call fills is state too, and so is a
buffer that B overwrites and A restores. Each is named, a state entry by its successive values from
S0 on (a value the next snapshot repeats shown once).

A subject that keeps state on purpose (dropout's draws advance the RNG in training mode; a compile
cache of its own keyed on shapes) declares it in its capability: `Capability.keeps_state` maps path
patterns (fnmatch, on the snapshot's paths; a pattern also covers what lies under the path it
matches) to the reason. The entries a declaration covers are not counted; the gate says what it was
told (in its message when red, in a KeptStateNote warning when green), and a declared pattern that
no entry matched in these calls is said too, not passed over in silence.
The reading counts the outputs and state entries that differ (and B given A's results, and B' not
B's, if so); it must be 0.
"""
from __future__ import annotations

import contextlib
import fnmatch
import importlib
import warnings
from typing import Callable, Iterable, Mapping, TypeVar

import torch

from fidelity.gates.attribution import checking
from fidelity.gates.compare import assert_bound
from fidelity.gates.state_snapshot import ABSENT, Fingerprint, describe, snapshot

LISTED = 12
"""Differences a message names one by one; the rest it counts."""

T = TypeVar("T")
_SAME_WIDTH_INTEGERS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
                        torch.float64: torch.int64}


class KeptStateNote(UserWarning):
    """A stateless gate that passed says what the subject declared it keeps, and what changed under it."""


def declared_kept_state(subject, mechanism: str) -> tuple[tuple[str, str], ...]:
    """The (path pattern, reason) pairs `subject`'s capability for `mechanism` declares (Capability.keeps_state)."""
    capability = subject.capabilities.get(mechanism)
    return tuple(getattr(capability, "keeps_state", ()) or ())


def assert_stateless(call: Callable[[], object], other: Callable[[], object], *, what: str,
                     modules: Mapping[str, torch.nn.Module] | Iterable[torch.nn.Module] = (),
                     implementation: Iterable[str] = (), objects: Mapping[str, object] = (),
                     fresh_other: Callable[[], object] | None = None,
                     kept: Iterable[tuple[str, str]] = (), cause: Iterable[str] = ()) -> int:
    """S0, then B', A, B, A again, each followed by a snapshot (see the module docstring): 0 differences, or a
    GateFailure naming each.

    `call` is A and `other` is B, closures over one object (and its inputs); `fresh_other` B on a fresh
    object (or, for a function, the function itself); `modules` the torch.nn.Modules they hold and
    `objects` any other object they call (a function subject's callable), by name; `implementation` the
    importable names of the implementation's modules (a subject's `modules[mechanism]`); `kept` the
    subject's declared kept state (declared_kept_state); `cause` the spec items a difference is attributed to
    (the paper's state item, e.g. "mhc.stateless": state kept between calls breaks every equation at once, and
    its finding belongs under its cause, not under each equation). Floating tensors in the results are compared,
    named by their place in the result (a dict's keys, a tuple's positions).

    >>> import torch
    >>> from fidelity.gates.statelessness import assert_stateless
    >>> a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    >>> double = lambda x: 2 * x
    >>> assert_stateless(lambda: double(a), lambda: double(b), what="double", objects={"double": double})
    0.0
    >>> class FirstAnswer:  # memoises its first output: any gate that calls a fresh object once passes it
    ...     first = None
    ...     def __call__(self, x):
    ...         self.first = 2 * x if self.first is None else self.first
    ...         return self.first
    >>> memo = FirstAnswer()
    >>> assert_stateless(lambda: memo(a), lambda: memo(b), what="memo", objects={"memo": memo})
    Traceback (most recent call last):
    ...
    fidelity.gates.compare.GateFailure: memo: A, B (other inputs), A again on one object: 2 difference(s): ...
    ... state memo.first: (absent) -> float32[2] cpu [2, 4] ... reading=2
    """
    modules = modules if isinstance(modules, Mapping) else tuple(modules)
    roots = dict(modules=modules, implementation=imported(implementation), objects=dict(objects))
    states = [snapshot(**roots)]

    def then(fn: Callable[[], object]) -> list[tuple[str, torch.Tensor]]:  # a call, and the state it left
        results = floating_results(fn())
        states.append(snapshot(**roots))
        return results
    fresh = then(fresh_other) if fresh_other is not None else None
    first = then(call)
    if not first:
        raise ValueError(f"{what}: the call returned no floating tensor to compare")
    other_results, again = then(other), then(call)

    found = result_differences(first, again)
    if _identical(first, other_results):
        found.append("B (other inputs) returned A's results bit for bit: a memo or cache keyed on something "
                     "other than the inputs' values, or B's inputs never reach the output")
    if fresh is not None:
        found += [f"B on the used object, not B on a fresh one: {d}" for d in result_differences(fresh, other_results)]
    changed = state_changes(*states)
    told = told_about(tuple(kept), changed)
    found += [f"state {path}: {' -> '.join(values)}" for path, values in changed.items() if path not in told["covered"]]
    return _judged(found, told, what, tuple(cause))


def built_twice(build: Callable[[], T], seed: int = 20261219) -> tuple[T, T]:
    """(the object the gate reuses, a fresh one for `fresh_other`), each built by `build` under the same seed of
    the global RNGs (restored after), so a factory that draws its initial values builds the same object twice.
    Built before the gate's snapshot S0: building touches no state the gate reads afterwards."""
    def one() -> T:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            return build()
    return one(), one()


def imported(implementation: Iterable[str]) -> tuple[str, ...]:
    """The implementation's modules, imported now if a call would import them first (a subject that imports
    its kernels on the first call): S0 must hold their globals, or all of them would read as the call's."""
    names = tuple(implementation)
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:  # not importable here: the call cannot have run it either
            pass
    return names


def _judged(found: list[str], told: dict, what: str, cause: tuple[str, ...]) -> int:
    # What a declaration covered is said (message, KeptStateNote), never recorded as a reading: a declared cache
    # changes on a process's first call and not after, and readings must repeat between clean runs.
    listed = "; ".join(found[:LISTED]) + (f"; and {len(found) - LISTED} more" if len(found) > LISTED else "")
    said = f" [{told['text']}]" if told["text"] else ""
    with checking(*cause) if cause else contextlib.nullcontext():
        reading = assert_bound(len(found), at_most=0, reading_name="reading",
                               what=f"{what}: A, B (other inputs), A again on one object: "
                                    f"{len(found)} difference(s){': ' + listed if found else ''}{said}")
    if told["text"]:
        warnings.warn(KeptStateNote(f"{what}: {told['text']}"), stacklevel=3)
    return reading


def state_changes(*states: Mapping[str, Fingerprint]) -> dict[str, list[str]]:
    """{path: its successive values, shortened (a value the next snapshot repeats shown once)} for every entry
    that is not the same in all the snapshots."""
    paths = list(dict.fromkeys(p for state in states for p in state))
    changed = {}
    for p in paths:
        values = [s.get(p, ABSENT) for s in states]
        if any(v != values[0] for v in values[1:]):
            changed[p] = [describe(v) for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
    return changed


def kept_by(path: str, pattern: str) -> bool:
    """Whether a declared pattern covers a snapshot path: it matches the path, or a path the path lies under."""
    return any(fnmatch.fnmatchcase(path, p) for p in (pattern, pattern + ".*", pattern + "[[]*", pattern + "{*"))


def told_about(kept: tuple[tuple[str, str], ...], changed: Mapping[str, list[str]]) -> dict:
    """What the declaration covered: {"covered": paths, "text": what the gate says it was told ("" if nothing)}."""
    covered, said = [], []
    for pattern, reason in kept:
        paths = [p for p in changed if kept_by(p, pattern)]
        covered += paths
        what = (f"{len(paths)} entr{'y' if len(paths) == 1 else 'ies'} changed, not counted: "
                + "; ".join(f"{p}: {' -> '.join(changed[p])}" for p in paths[:3])
                + (f"; and {len(paths) - 3} more" if len(paths) > 3 else "")) if paths \
            else "did not change in these calls (a declaration nothing needed)"
        said.append(f"{pattern!r} ({reason}): {what}")
    text = ("declared kept state: " + " | ".join(said)) if said else ""
    return {"covered": list(dict.fromkeys(covered)), "text": text}


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
