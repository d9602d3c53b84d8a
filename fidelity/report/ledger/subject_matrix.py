"""A paper's subject matrix: its equations x the subjects the gate run ran (passed / failed / not run
and why), and, when the run holds third-party subjects, a cell per package (passed / finding /
differs from our choice / not run / not provided) that touches nothing of ours.
"""
from __future__ import annotations

import re

from fidelity.spec import choices
from fidelity.report.ledger.terms import CHOICE, FINDING, IMPLEMENTED, NOT_PROVIDED


def strip_skip(reason: str) -> str:
    """'Skipped: not run: no CUDA device' -> 'no CUDA device'."""
    return re.sub(r"^(Skipped:\s*)?(not run:\s*)?", "", reason) or reason


def _failures_under(row: dict, equation: str, lacked: frozenset[str]) -> list[dict]:
    """A third-party gate row's failures attributed to `equation` (fidelity.gaterun.conformance.checked)."""
    from fidelity.gaterun.conformance import checked

    return [f for f in row.get("failed") or [] if equation in checked(f, row, lacked)]


def third_party_cell(cat, equation: str, covering: list[dict], name: str, lacked: frozenset[str]) -> dict:
    """One third-party subject's cell: its gate rows (from its own run) that cover the equation. A row counts as
    failed here only where a failure is attributed to this equation (a finding about another equation of the same
    gate, or one on a path the subject lacks, is not this one's); a cell whose failures all differ only from our
    tier-c choices says so, never 'finding'."""
    from fidelity.gaterun.conformance import LACKED_REASON, checked

    if not covering:
        return {"status": NOT_PROVIDED, "passed": 0, "failed": 0, "not_run": 0, "reasons": []}
    if equation in lacked:  # a placement the subject has no path for: as check --subject says, not run
        return {"status": "not run", "passed": 0, "failed": 0, "not_run": len(covering), "reasons": [LACKED_REASON]}
    runs = [(r, r["subjects"][name]) for r in covering if name in r.get("subjects", {})]
    failing = [(row, _failures_under(row, equation, lacked)) for row, r in runs if r["status"] == "failed"]
    failing = [(row, fs) for row, fs in failing if fs]
    failed = len(failing)
    passed = sum(1 for row, r in runs if r["passed"] and not any(row is f for f, _ in failing))
    reasons = sorted({strip_skip(x) for _, run in runs for x in run.get("not_run_reasons", [])})
    ours = failed and all(choices.our_choices(cat, checked(f, row, lacked)) for row, fs in failing for f in fs)
    status = CHOICE if ours else FINDING if failed else "passed" if passed else "not run"
    return {"status": status, "passed": passed, "failed": failed, "not_run": len(covering) - passed - failed,
            "reasons": reasons}


def subject_matrix(cat, paper: str, gates: dict[str, dict], gate_run: dict | None, note: str) -> dict:
    from fidelity.gaterun.conformance import paths_not_run

    if gate_run is None:
        return {"note": note, "subjects": [], "rows": []}
    names = {s["name"] for s in gate_run.get("subjects", [])}
    for g in gates.values():
        if g["run"]:
            names.update(g["run"]["subjects"])
    subjects = sorted(names)
    unavailable = {s["name"]: s.get("reason") for s in gate_run.get("subjects", []) if not s.get("available", True)}
    third = ({t["name"]: t.get("gates", []) for t in gate_run["third_party"]}
             if "third_party" in gate_run else None)
    lacked = {n: paths_not_run(cat, tg, n) for n, tg in (third or {}).items()}
    rows = []
    for eq in cat.equations_of(paper):
        covering = [g for g in gates.values() if eq.id in g["equations"] and g["run"]]
        third_covering = {n: [r for r in tg if eq.id in r.get("equations", [])] for n, tg in (third or {}).items()}
        if not covering and not any(third_covering.values()) and eq.data["status"] not in IMPLEMENTED:
            continue
        cells = {}
        for s in subjects:
            if not covering:
                cells[s] = {"status": "no gate", "passed": 0, "failed": 0, "not_run": 0, "reasons": []}
                continue
            runs = [g["run"]["subjects"][s] for g in covering if s in g["run"]["subjects"]]
            reasons = sorted({strip_skip(r) for r in (x for run in runs for x in run.get("not_run_reasons", []))})
            passed = sum(1 for r in runs if r["status"] == "passed")
            failed = sum(1 for r in runs if r["status"] == "failed")
            not_run = len(covering) - passed - failed
            if not runs:
                reasons = [f"subject unavailable: {unavailable[s]}" if unavailable.get(s) else
                           "no gate of this equation runs this subject (it does not provide the mechanism)"]
            status = "failed" if failed else "passed" if passed else "not run"
            cells[s] = {"status": status, "passed": passed, "failed": failed, "not_run": not_run, "reasons": reasons}
        row = {"equation": eq.id, "status": eq.data["status"], "gates": [g["gate"] for g in covering],
               "cells": cells}
        if third is not None:
            row["third_party"] = {n: third_party_cell(cat, eq.id, c, n, lacked[n])
                                  for n, c in sorted(third_covering.items())}
        rows.append(row)
    matrix = {"note": note, "subjects": subjects, "rows": rows}
    if third is not None:
        # a package gets a column in the papers whose equations its gates cover, and only there
        matrix["third_party"] = [n for n in sorted(third)
                                 if any(r["third_party"][n]["status"] != NOT_PROVIDED for r in rows)]
    return matrix
