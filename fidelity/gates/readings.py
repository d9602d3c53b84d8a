"""The number a gate compared, recorded so the perturbation runner can keep it.

Every gate records its reading (green or red) through `record`. The pytest
plugin of the perturbation runner resets the store before each test and reads
it after, so a baseline run can check that readings do not move between two
runs, and a red run can record what the gate saw.

A red test's reading is the failing assertion's (`of_failure`): a GateFailure's
own number; for a plain assert, the number the gate recorded itself, but never
one a comparison helper (fidelity.gates.compare) recorded and then passed.
"""
from __future__ import annotations

_readings: dict[str, float] = {}
_by_passing_comparison: set[str] = set()


def record(value: float, name: str = "reading", *, by_comparison: bool = False) -> float:
    """Record `value` under `name` for the test now running; return it unchanged. by_comparison: a comparison
    helper's record, which raises a GateFailure carrying its reading where it fails."""
    _readings[name] = float(value)
    if by_comparison:
        _by_passing_comparison.add(name)
    else:
        _by_passing_comparison.discard(name)
    return value


def current() -> dict[str, float]:
    """A copy of the readings recorded since the last reset."""
    return dict(_readings)


def of_failure(error: BaseException | None) -> dict[str, float]:
    """The readings of a test that failed with `error`, "reading" being the failing assertion's: a
    GateFailure's .reading; after a plain assert, none where the last "reading" was a passing comparison's."""
    readings = dict(_readings)
    own = getattr(error, "reading", None)  # GateFailure (compare.py) carries the number it compared
    if own is not None:
        readings["reading"] = float(own)
    elif "reading" in _by_passing_comparison:
        del readings["reading"]  # the failing assertion compared no number; an earlier comparison passed
    return readings


def reset() -> None:
    _readings.clear()
    _by_passing_comparison.clear()
