"""Toy gates on toysubj.dice: one holds it to its constant; one reads Python's unseeded global generator
itself (flaky on purpose: its reading differs in every process)."""
import random

import pytest

from fidelity.gates.readings import record
from toysubj import dice


@pytest.mark.gate(equations=["toy.dice"], targets=["toysubj.dice"])
def test_roll_is_one_half():
    r = record(abs(dice.roll() - 0.5))
    assert r == 0.0, f"|roll() - 1/2| = {r}"


@pytest.mark.gate(equations=["toy.dice"], targets=["toysubj.dice"])
def test_reading_from_the_global_generator():
    r = record(random.random() + dice.roll())
    assert r >= 0.5
