"""Evidence outside the specs: records of perturbations no spec defines, counted for nothing.
"""
from __future__ import annotations

from fidelity.report.anchors import gate_short
from fidelity.report.blocks import Code, Document, Heading, Para, Table
from fidelity.report.inline import DASH, num, outcome_tag


def section(doc: Document, ledger: dict) -> None:
    ids = ledger["outside_specs"]
    if not ids:
        return
    doc.add(Heading(2, "Evidence outside the specs", "outside-specs"))
    doc.add(Para("Evidence records of perturbations that no spec defines (from `fidelity perturb --file`, or "
                 "removed since). They are stale by definition and count for nothing."))
    rows = [e for e in ledger["evidence"] if e["perturbation"] in ids]
    doc.add(Table(("perturbation", "gate", "outcome", "observed reading", "when"),
                  tuple((Code(e["perturbation"]), Code(gate_short(e["gate"])), outcome_tag(e["outcome"]),
                         num(e["reading"], 9),
                         e["recorded_at"] or DASH) for e in rows)))
