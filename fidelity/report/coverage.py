"""The coverage table: per mechanism, which gate classes hold it, and whether those gates are accepted.

Built from the gate run's rows (each carries its marker's `mechanism` and `gate_class`) and the
evidence (a gate is accepted once a current record shows it red by its own assertion and green
after). A row per mechanism the project holds (its suite's gates name it, or its configuration
declares it). A cell lists the class's gates for that mechanism; "missing" where the class applies
and no gate holds it; "does not apply" for a module-only class on a function mechanism, and for
defaults_as_shipped where the interface declares no optional argument (gate_classes.applies_to).
"""
from __future__ import annotations

from typing import Iterable, Mapping

from fidelity.gates.gate_classes import GATE_CLASSES, applies_to


def gather(gates: Mapping[str, dict], *, mechanisms: Mapping[str, object], gate_run: bool,
           own: Iterable[str] = ()) -> dict:
    """{"classes": {name: promise}, "available": bool, "rows": [{mechanism, kind, cells: {class: cell}}]}.

    A row per mechanism the project holds: one a gate of its suite names, or one of `own` (those its
    configuration declares, gated or not); a mechanism fidelity knows that neither names is another
    project's business, not a row of "missing". A cell: {"applies", "gates": [gate ids], "accepted":
    [the accepted ones]}. Without a gate run the markers are unknown and `available` is False (rows empty)."""
    out = {"classes": dict(GATE_CLASSES), "available": gate_run, "rows": []}
    if not gate_run:
        return out
    held = {g.get("mechanism") for g in gates.values()} | set(own)
    for name, mech in sorted((n, m) for n, m in mechanisms.items() if n in held):
        kind = getattr(mech, "kind", "function")
        cells = {}
        for cls in GATE_CLASSES:
            held = sorted(g["gate"] for g in gates.values() if g.get("mechanism") == name and g.get("gate_class") == cls)
            cells[cls] = {"applies": applies_to(cls, mech), "gates": held,
                          "accepted": [g for g in held if gates[g]["accepted"]]}
        out["rows"].append({"mechanism": name, "kind": kind, "cells": cells})
    return out


def missing(table: dict) -> list[tuple[str, str]]:
    """(mechanism, class) pairs where the class applies and no accepted gate holds it."""
    return [(r["mechanism"], cls) for r in table["rows"] for cls, c in r["cells"].items()
            if c["applies"] and not c["accepted"]]
