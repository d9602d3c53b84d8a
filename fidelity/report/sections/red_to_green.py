"""A paper's Red to green: per perturbation and gate, the observed red reading (or the
predicted one, said as such), what the gate said, green after, and the basis of the row.
"""
from __future__ import annotations

from fidelity.evidence.outcome import Outcome
from fidelity.report.anchors import evidence_id, gate_ref, pert_ref
from fidelity.report.blocks import Bullets, Document, Heading, Long, Para, Table, Tag, Target, anchor
from fidelity.report.inline import DASH, outcome_tag, reading, yes_no
from fidelity.report.ledger.terms import OBSERVED, OBSERVED_STALE, PREDICTED_ONLY, perturbation_key


def basis_tag(basis: str):
    return Tag(basis, {OBSERVED: "observed", OBSERVED_STALE: "stale", PREDICTED_ONLY: "predicted"}[basis])


def observed_red_reading(r: dict):
    """A red gate's observed reading; one red by an assertion that compared no number says so (not a 0)."""
    if r["observed"] is None and r["outcome"] == Outcome.RED_BY_ASSERTION:
        return "none (the failing assertion compared no number)"
    return reading(r["observed"])


def section(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Red to green", anchor(p["id"], "red-to-green"), collapsed=True))
    rows = p["red_to_green"]
    if not rows:
        doc.add(Para("No perturbation of this paper has evidence or a predicted reading. No run, no row."))
        return
    rows = sorted(rows, key=lambda r: (perturbation_key(r["perturbation"]), r["gate"]))
    doc.add(Table(("perturbation", "gate", "outcome", "observed red reading", "what the gate said",
                   "predicted reading", "green after", "when", "basis"),
                  tuple((Target(evidence_id(r["perturbation"], r["gate"]), (pert_ref(r["perturbation"], r["title"]),
                                                                            " " + r["title"])), gate_ref(r["gate"]),
                         outcome_tag(r["outcome"]),
                         observed_red_reading(r) if r["basis"] != PREDICTED_ONLY else DASH,
                         _what_the_gate_said(r), reading(r["predicted"]), yes_no(r["green_after"]), r["when"] or DASH,
                         basis_tag(r["basis"]))
                        for r in rows)))
    stale = [r for r in rows if r["basis"] == OBSERVED_STALE]
    if stale:
        doc.add(Bullets(tuple((pert_ref(r["perturbation"]), " x ", gate_ref(r["gate"]), " stale: " +
                               "; ".join(r["stale_reasons"])) for r in stale)))


def _what_the_gate_said(row: dict):
    """The failure message of the instance that went red, without its node id (the gate column names it)."""
    detail = row.get("detail") or ""
    if row["basis"] == PREDICTED_ONLY or not detail:
        return DASH
    if detail.startswith(row["gate"] + "[") and "]: " in detail:
        detail = detail.split("]: ", 1)[1]
    return Long(detail)
