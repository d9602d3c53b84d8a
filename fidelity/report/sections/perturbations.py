"""A paper's Perturbations: what each changes, the equations it breaks, the gates that caught
it and the readings the oracles predict.
"""
from __future__ import annotations

from fidelity.report.anchors import gate_ref, ref_id
from fidelity.report.blocks import Code, Document, Heading, Para, Table, Tag, Target, anchor
from fidelity.report.inline import eq_refs, joined, num, reading


def section(doc: Document, p: dict, ledger: dict) -> None:
    doc.add(Heading(3, "Perturbations", anchor(p["id"], "perturbations"), collapsed=True))
    if not p["perturbations"]:
        doc.add(Para("No perturbations are defined for this paper."))
        return
    readings = {(e["perturbation"], e["gate"]): e["reading"] for e in ledger["evidence"] if e["current"]}
    rows = []
    for pid in p["perturbations"]:
        x = ledger["perturbations"][pid]
        caught = joined([(gate_ref(g), f" ({num(readings.get((pid, g)), 4)})") for g in x["caught_by"]], "none")
        predicted = joined([(gate_ref(r["gate"]), " = ", reading(r["reading"])) for r in x["predicted"]])
        rows.append((Target(ref_id("pert", pid), Code(pid)), x["title"], Code(x["target"]), eq_refs(x["covers"]),
                     Tag(x["status"], "passed" if x["status"] == "caught" else "failed"), caught, predicted))
    doc.add(Para(f"{len(rows)} perturbations: what each changes, the equations it breaks, the gates that caught "
                 "it (the reading they observed, in brackets) and the readings oracles predict."))
    doc.add(Table(("perturbation", "title", "target", "equations covered", "status", "caught by (reading)",
                   "predicted readings"), tuple(rows)))
