"""Separation: how far a predicted wrong value lies from the right one, in units of a gate's tolerance.

README, Design: separation: "Each fixture gate knows its separation: the distance from the right
value to each perturbation's predicted value, in units of its tolerance. A
separation under 10 is a weak gate; report it."

What can be computed without inventing anything:
- the RELATIVE distance of every fixture prediction from its expected value,
  max_i |p_i - e_i| / max(|e_i|, floor), from the fixture file alone;
- the separation in tolerance units, only where a gate says what its tolerance
  is (a reading named 'rtol' or 'tolerance') and which fixtures it read (the
  gate run's or the evidence's record of fixtures opened); or where a gate
  records its separation itself (a reading named 'separation...').
Everything else is reported as 'not computed', with the reason.
"""
from __future__ import annotations

import math

WEAK_BELOW = 10.0
FLOOR = 1e-30


def _leaves(value) -> list:
    if isinstance(value, list):
        out = []
        for v in value:
            out.extend(_leaves(v))
        return out
    return [value]


def _as_float(x) -> float:
    """A digit string ("0.25", "nan", "+inf") or a number as a float."""
    return float(x)


def relative_distance(predicted, expected, floor: float = FLOOR) -> float | None:
    """max |p - e| / max(|e|, floor) over matching leaves; None if the shapes differ."""
    p, e = _leaves(predicted), _leaves(expected)
    if len(p) != len(e) or not p:
        return None
    worst = 0.0
    for a, b in zip(p, e):
        a, b = _as_float(a), _as_float(b)
        if not (math.isfinite(a) and math.isfinite(b)):
            d = 0.0 if a == b else math.inf
        else:
            d = abs(a - b) / max(abs(b), floor)
        worst = max(worst, d)
    return worst


def _field(expected: dict, path: str):
    node = expected
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def fixture_predictions(fixture: dict) -> list[dict]:
    """One row per (prediction, compared field) of a fixture with its relative distance."""
    rows = []
    for name, pred in sorted((fixture.get("predictions") or {}).items()):
        field = pred.get("field", "")
        target = _field(fixture.get("expected") or {}, field)
        parts = [(field, pred, target)] if "values" not in pred else \
            [(f"{field}.{k}", v, (target or {}).get(k) if isinstance(target, dict) else None)
             for k, v in sorted(pred["values"].items())]
        for fld, p, e in parts:
            dist = None
            if isinstance(p, dict) and isinstance(e, dict) and "digits" in p and "digits" in e:
                dist = relative_distance(p["digits"], e["digits"])
            rows.append({"fixture": fixture["id"], "prediction": name, "field": fld,
                         "description": pred.get("description", ""), "equations": list(fixture.get("equations", [])),
                         "relative_distance": dist})
    return rows


def in_tolerances(relative: float | None, rtol: float | None) -> float | None:
    if relative is None or rtol is None or not rtol > 0:
        return None
    return relative / rtol


def is_weak(separation: float | None) -> bool | None:
    return None if separation is None else separation < WEAK_BELOW
