"""The gates: the catalogue of every gate (Gates), and per paper its gates x perturbations
(the grid gatematrix draws).
"""
from __future__ import annotations

from fidelity.report import gatematrix
from fidelity.report.anchors import gate_short, ref_id
from fidelity.report.blocks import Code, Document, Heading, Para, Table, Tag, Target, anchor
from fidelity.report.inline import DASH, eq_refs, pert_refs


def catalogue(doc: Document, ledger: dict) -> None:
    gates = ledger["gates"]
    if not gates:
        return
    doc.add(Heading(2, "Gates", "gates", collapsed=True))
    doc.add(Para(f"{len(gates)} gates: the equations each holds, its class, whether it is accepted and by which "
                 "perturbations, and how it ran in the recorded gate suite."))
    rows = []
    for g, x in sorted(gates.items()):
        run = (x.get("run") or {}).get("status") or DASH
        rows.append((Target(ref_id("gate", g), Code(gate_short(g))), eq_refs(x["equations"]), x["gate_class"] or DASH,
                     Tag("accepted", "passed") if x["accepted"] else Tag("not accepted", "failed"),
                     pert_refs(x["accepted_by"]), run))
    doc.add(Table(("gate", "equations", "class", "accepted", "accepted by", "gate suite"), tuple(rows)))


def matrix(doc: Document, p: dict, ledger: dict) -> None:
    grid = gatematrix.build(p, ledger)
    if grid is not None:
        doc.add(Heading(3, "Gates x perturbations", anchor(p["id"], "gate-matrix"), collapsed=True))
        doc.add(grid)
