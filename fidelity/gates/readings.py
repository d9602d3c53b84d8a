"""The number a gate compared, recorded so the perturbation runner can keep it.

Every gate records its reading (green or red) through `record`. The pytest
plugin of the perturbation runner resets the store before each test and reads
it after, so a baseline run can check that readings do not move between two
runs, and a red run can record what the gate saw.
"""
from __future__ import annotations

_readings: dict[str, float] = {}


def record(value: float, name: str = "reading") -> float:
    """Record `value` under `name` for the test now running; return it unchanged."""
    _readings[name] = float(value)
    return value


def current() -> dict[str, float]:
    """A copy of the readings recorded since the last reset."""
    return dict(_readings)


def reset() -> None:
    _readings.clear()
