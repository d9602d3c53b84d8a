"""store.json_copy, the copy of parsed fixture JSON each gate gets: the same values and types in the same
order, sharing no dict or list with what the store keeps (a gate that edits its copy leaves the next gate's
alone), and made without a Python call per element (a gate run under a line trace, as discovery's first
baseline is, paid a trace call for each)."""
import math
import sys

from fidelity.fixtures.store import json_copy

PARSED = {"b": [True, False, None, 0, 1, -0.0, float("nan"), float("inf"), 2 ** 80, "é", ""],
          "a": {"nested": [[1.5, [2.5, {"k": [3]}]], []], "empty": {}},
          "readings": [0.1 * i for i in range(50)]}


def _same(copy, original) -> None:
    assert type(copy) is type(original), (copy, original)
    if isinstance(original, dict):
        assert copy is not original and list(copy) == list(original)
        for key in original:
            _same(copy[key], original[key])
    elif isinstance(original, list):
        assert copy is not original and len(copy) == len(original)
        for c, o in zip(copy, original):
            _same(c, o)
    elif isinstance(original, float) and math.isnan(original):
        assert math.isnan(copy)
    else:
        assert copy == original and (not isinstance(original, float) or math.copysign(1, copy) == math.copysign(1, original))


def _containers(value, seen: list) -> list:
    if isinstance(value, (dict, list)):
        seen.append(id(value))
        for v in (value.values() if isinstance(value, dict) else value):
            _containers(v, seen)
    return seen


def test_the_copy_has_the_same_values_types_and_order_and_shares_no_container():
    copy = json_copy(PARSED)
    _same(copy, PARSED)
    mine, theirs = _containers(copy, []), _containers(PARSED, [])
    assert len(set(mine)) == len(mine) and not set(mine) & set(theirs)
    copy["a"]["nested"][0][1][1]["k"].append(4)
    assert PARSED["a"]["nested"][0][1][1]["k"] == [3]


def test_a_copy_under_a_line_trace_makes_no_python_call_per_element():
    calls = []

    def tracer(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_name)
        return None

    value = {"rows": [[float(i), float(-i)] for i in range(1000)]}
    sys.settrace(tracer)
    try:
        json_copy(value)
    finally:
        sys.settrace(None)
    assert len(calls) <= 3, f"{len(calls)} Python calls, the first: {calls[:5]}"
