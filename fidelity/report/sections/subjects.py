"""The subjects the gate suite ran on (Subjects), and per paper its equations x subjects
(Subject matrix), with a column per third-party package.
"""
from __future__ import annotations

from fidelity.report.anchors import eq_ref
from fidelity.report.blocks import Bullets, Code, Document, Heading, Link, Para, Strong, Table, Tag, anchor
from fidelity.report.inline import DASH
from fidelity.report.ledger.terms import CHOICE, FINDING, NOT_PROVIDED


def section(doc: Document, ledger: dict) -> None:
    run = ledger["inputs"]["gate_run"]
    if run is None or not run["subjects"]:
        return
    doc.add(Heading(2, "Subjects", "subjects"))
    doc.add(Table(("subject", "available here", "description"),
                  tuple((Code(s["name"]), "yes" if s.get("available") else f"no: {s.get('reason')}",
                         s.get("description", "")) for s in run["subjects"])))


def _cell(cell: dict):
    status = cell["status"]
    kind = {"passed": "passed", "failed": "failed", "not run": "skipped", "no gate": "other"}[status]
    gates = cell["passed"] + cell["failed"] + cell["not_run"]
    if status == "passed":
        extra = f" {cell['passed']} of {gates} gates"
    elif status == "failed":
        extra = f" {cell['failed']} of {gates} gates"
    else:
        return Tag(status, kind)
    if cell["not_run"]:
        extra += f", {cell['not_run']} not run"
    return (Tag(status, kind), extra)


def _third_party_cell(cell: dict):
    status = cell["status"]
    if status == NOT_PROVIDED:
        return DASH
    if status == "not run":
        return Tag(status, "skipped")
    failing = status in (FINDING, CHOICE)
    tag = Tag(status, "failed" if status == FINDING else "other" if status == CHOICE else "passed")
    gates = cell["passed"] + cell["failed"] + cell["not_run"]
    extra = f" {cell['failed'] if failing else cell['passed']} of {gates} gates"
    if failing and cell["passed"]:
        extra += f", {cell['passed']} passed"
    if cell["not_run"]:
        extra += f", {cell['not_run']} not run"
    return (tag, extra)


def third_party_header(name: str) -> str:
    return f"{name} (third party)"


def matrix(doc: Document, p: dict) -> None:
    m = p["subject_matrix"]
    doc.add(Heading(3, "Subject matrix", anchor(p["id"], "subjects")))
    if not m["subjects"]:
        doc.add(Para(("Equations x subjects: ", Strong(m["note"]), ".")))
        return
    doc.add(Para(("Equations x subjects, from ", m["note"], ". A cell counts the equation's gates: "
                  "passed when every instance that ran passed; instances skipped for a missing subject or device "
                  "are not run, never passed.")))
    third = m.get("third_party") or []
    if third:
        doc.add(Para((Strong("(third party)"), ": someone else's package, from a gate run of its own on that "
                      "package alone. A ", Strong("finding"), " there is about that package, never a failure of "
                      "ours (see ", Link("Findings about third-party subjects", "#third-party"), "); ", DASH,
                      ": no gate of this equation runs on it (it does not provide the mechanism).")))
    rows = tuple((eq_ref(r["equation"]), *[_cell(r["cells"][s]) for s in m["subjects"]],
                  *[_third_party_cell(r["third_party"][t]) for t in third]) for r in m["rows"])
    doc.add(Table(("equation", *m["subjects"], *[third_party_header(t) for t in third]), rows, css="matrix"))
    why = []
    for s in m["subjects"]:
        reasons = sorted({x for r in m["rows"] for x in r["cells"][s]["reasons"]})
        if reasons:
            why.append((Code(s), ": " + "; ".join(reasons)))
    for t in third:
        reasons = sorted({x for r in m["rows"] for x in r["third_party"][t]["reasons"]})
        if reasons:
            why.append((Code(t), " (third party): " + "; ".join(reasons)))
    if why:
        doc.add(Para(Strong("Why not run")))
        doc.add(Bullets(tuple(why)))
