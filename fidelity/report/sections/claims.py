"""A paper's Claims: the numbers it states, checked by an oracle or listed as unchecked.
"""
from __future__ import annotations

from fidelity.report.anchors import ref_id
from fidelity.report.blocks import Code, Document, Heading, Para, Strong, Table, Tag, Target, anchor
from fidelity.report.inline import reading


def section(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Claims", anchor(p["id"], "claims"), collapsed=True))
    checked = [c for c in p["claims"] if c["verdict"] in ("confirmed", "refuted", "error")]
    unchecked = [c for c in p["claims"] if c["verdict"] == "unchecked"]
    if checked:
        doc.add(Table(("claim", "stated", "computed", "difference", "verdict", "source"),
                      tuple((Target(ref_id("claim", c["id"]), Code(c["id"])), c["stated"], reading(c["computed"], 6),
                             reading(c["difference"], 6),
                             Tag(c["verdict"], {"confirmed": "passed", "refuted": "failed"}.get(c["verdict"], "other")),
                             c["source"]) for c in checked)))
    else:
        doc.add(Para("No claim of this paper is checked by an oracle."))
    if unchecked:
        doc.add(Para((Strong(f"Unchecked ({len(unchecked)})"), ": no oracle computes these; they are listed, "
                                                               "never counted as confirmed.")))
        doc.add(Table(("claim", "stated", "why unchecked", "source"),
                      tuple((Target(ref_id("claim", c["id"]), Code(c["id"])), c["stated"],
                             " ".join((c["note"] or "").split()), c["source"])
                            for c in unchecked)))
