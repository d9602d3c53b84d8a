"""A flaky toy gate: its reading is the clock."""
import pytest

from fidelity.gates.readings import record
from toysubj import clock


@pytest.mark.gate(equations=["toy.clock"], targets=["toysubj.clock"])
def test_clock_reads():
    r = record(float(clock.now()))
    assert r > 0, f"clock reading {r}"
