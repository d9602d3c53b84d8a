"""A paper's own word, from its spec: Provenance, Equations (with whether each is accepted),
and Deltas.
"""
from __future__ import annotations

from fidelity.report.anchors import eq_ref, ref_id
from fidelity.report.blocks import Bullets, Code, Document, Heading, Link, Para, Strong, Table, Tag, Target, anchor
from fidelity.report.inline import codes, eq_refs, gate_codes, pert_refs


def provenance(doc: Document, p: dict) -> None:
    prov = p["provenance"]
    ac = prov["author_code"]
    doc.add(Heading(3, "Provenance", anchor(p["id"], "provenance")))
    items = [
        ("arXiv: ", Link(f"{prov['arxiv']}{prov['version']}", prov["url"]), " ", Strong(prov["title"])),
        "Authors: " + "; ".join(prov["authors"]),
        *[f"Read {prov['read_date']} from: {w}" for w in prov["read_where"]],
        ("Author code: ", Strong(ac["status"]), (": " + " ".join(ac["where"].split())) if ac.get("where") else ""),
    ]
    if ac.get("differs"):
        items.append("Author code differs from the paper: " + " ".join(ac["differs"].split()))
    if prov["notes"]:
        items.append("Notes: " + prov["notes"])
    items.append(("Spec: ", Code(prov["defined_at"])))
    doc.add(Bullets(tuple(items)))


_STATUS_KIND = {"implemented": "passed", "deviates": "other", "not-implemented": "skipped"}


def _status_tag(status: str):
    return Tag(status, _STATUS_KIND.get(status, "other"))


def accepted_cell(e: dict):
    if e["status"] == "not-implemented":
        return Tag("not claimed", "skipped")
    if not e["gates"]:
        return Tag("no gate", "failed")
    if e["accepted"] and e["accepted_by"]:
        return (Tag("accepted", "passed"), " by ", pert_refs(e["accepted_by"]))
    if e["accepted"]:  # its gates are accepted, but under perturbations of other equations: said as such
        return (Tag("gates accepted", "passed"), "; no perturbation of this equation (its gates went red under ",
                pert_refs(e.get("gates_accepted_by", ())), ")")
    return Tag("not accepted", "failed")


def table(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Equations", anchor(p["id"], "equations")))
    rows = tuple((Target(ref_id("eq", e["id"]), Code(e["id"])), e["title"], e["where_text"], e["tier"],
                  _status_tag(e["status"]), codes(e["code"]), gate_codes(e["gates"]), accepted_cell(e))
                 for e in p["equations"])
    doc.add(Table(("id", "title", "location", "tier", "status", "code", "gates", "accepted"), rows))


def deltas(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Deltas", anchor(p["id"], "deltas")))
    if p["deltas"]:
        doc.add(Table(("equation", "status", "what differs", "why"),
                      tuple((eq_ref(d["equation"]), _status_tag(d["status"]), " ".join(d["what"].split()),
                             " ".join(d["why"].split()))
                            for d in p["deltas"])))
    else:
        doc.add(Para("No deltas recorded."))
    if p["deviates_without_delta"]:
        doc.add(Para((Strong("Deviating without a stated delta: "), eq_refs(p["deviates_without_delta"]))))
