"""Toy gates on toysubj.arith (named toygate_* so no normal run collects them)."""
import json
import pathlib

import pytest

from fidelity.gates.readings import record
from toysubj import arith

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "add_case.json"


@pytest.fixture(scope="module")
def add_case():
    return json.loads(FIXTURE.read_text())


@pytest.mark.gate(equations=["toy.add"], targets=["toysubj.arith"])
@pytest.mark.parametrize("a", [1.0, 2.0])
def test_add_fixture(add_case, a):
    expected = a + add_case["b"]
    rel = record(abs(arith.add(a, add_case["b"]) - expected) / abs(expected))
    assert rel <= 1e-12, f"add: relative error {rel} > 1e-12"


@pytest.mark.gate(equations=["toy.scale"], targets=["toysubj.arith"])
def test_scale():
    err = record(abs(arith.scale(3.0) - 6.0))
    assert err == 0.0, f"scale: |scale(3) - 6| = {err}"


@pytest.mark.gate(equations=["toy.neg"])  # its target is added by the conftest
def test_neg_is_float():
    r = arith.neg(1.5)
    record(1.0 if isinstance(r, float) else 0.0)
    assert isinstance(r, float), "neg must return a float"  # a weak gate: any float passes
