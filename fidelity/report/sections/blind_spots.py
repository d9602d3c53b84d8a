"""A paper's Blind spots: the perturbations no gate caught (and the gates listed that did not
go red), and those not observed yet.
"""
from __future__ import annotations

from fidelity.report.anchors import gate_ref, pert_ref
from fidelity.report.blocks import Bullets, CodeBlock, Document, Heading, Para, Strong, Tag, anchor
from fidelity.report.inline import gate_codes, outcome_tag


def section(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Blind spots", anchor(p["id"], "blind-spots"), collapsed=bool(p["blind_spots"])))
    if not p["blind_spots"]:
        doc.add(Para("No perturbation with current evidence survived, and every listed gate went red."
                     if p["perturbations"] else "No perturbations are defined for this paper."))
    for b in p["blind_spots"]:
        if b["status"] != "caught":
            head = (pert_ref(b["perturbation"]), " ", b["title"], ": ", Tag(b["status"], "failed"),
                    " (no gate went red by its own assertion and green after)")
        else:
            head = (pert_ref(b["perturbation"]), " ", b["title"], ": caught by ", gate_codes(b["caught_by"]))
        doc.add(Para(head))
        lines = [(gate_ref(g), ": ", outcome_tag(o)) for g, o in b["outcomes"].items()]
        lines += [("listed as a gate that must go red, but did not: ", gate_ref(g))
                  for g in b["listed_not_red"]]
        if lines:
            doc.add(Bullets(tuple(lines)))
        if b["diff"]:
            doc.add(CodeBlock(b["diff"], "diff", summary=f"diff of {b['perturbation']}"))
    if p["not_observed"]:
        doc.add(Para(Strong("Not observed (no current evidence; neither caught nor a blind spot yet)")))
        doc.add(Bullets(tuple((pert_ref(n["perturbation"]), f" {n['title']}: {n['status']}")
                              for n in p["not_observed"])))
