"""A toy gate that is red with no perturbation at all."""
import pytest

from fidelity.gates.readings import record
from toysubj import broken


@pytest.mark.gate(equations=["toy.one"], targets=["toysubj.broken"])
def test_one():
    r = record(float(broken.one()))
    assert r == 1.0, f"one() = {r}"
