"""Relative distances of fixture predictions, and when a separation may be stated at all."""
import math

from fidelity.report import separation as sep


def test_relative_distance_is_the_worst_entry():
    assert sep.relative_distance([["3", "4"]], [["2", "4"]]) == 0.5
    assert math.isclose(sep.relative_distance(["1"], ["0"]), 1e30)        # floor under |expected|
    assert sep.relative_distance(["nan"], ["1"]) == math.inf
    assert sep.relative_distance(["+inf"], ["+inf"]) == 0.0
    assert sep.relative_distance(["1", "2"], ["1"]) is None               # shapes differ: no number


def test_fixture_predictions_follow_dotted_fields_and_value_groups():
    fixture = {"id": "f", "equations": ["x.eq1"],
               "expected": {"n2": {"distance": {"digits": ["1", "2"]}},
                            "paper": {"alpha": {"digits": ["1"]}, "h": {"digits": ["4"]}}},
               "predictions": {"once": {"field": "n2.distance", "digits": ["1", "1"], "description": "d"},
                               "l2": {"field": "paper", "description": "e",
                                      "values": {"alpha": {"digits": ["2"]}, "h": {"digits": ["5"]}}}}}
    rows = {(r["prediction"], r["field"]): r["relative_distance"] for r in sep.fixture_predictions(fixture)}
    assert rows == {("once", "n2.distance"): 0.5, ("l2", "paper.alpha"): 1.0, ("l2", "paper.h"): 0.25}


def test_separation_needs_a_tolerance():
    assert sep.in_tolerances(0.5, None) is None
    assert sep.in_tolerances(None, 0.1) is None
    assert sep.in_tolerances(0.5, 0.1) == 5.0
    assert sep.is_weak(5.0) is True and sep.is_weak(10.0) is False and sep.is_weak(None) is None
