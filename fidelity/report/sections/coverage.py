"""Coverage by gate class: per mechanism, the classes of gate that hold it and whether they
are accepted.
"""
from __future__ import annotations

from fidelity.report.blocks import Bullets, Code, Document, Heading, Para, Table, Tag


def _coverage_cell(cell: dict):
    if not cell["applies"]:
        return "does not apply"
    if not cell["gates"]:
        return Tag("missing", "failed")
    accepted = len(cell["accepted"])
    text = f"{len(cell['gates'])} gate{'s' if len(cell['gates']) != 1 else ''}, {accepted} accepted"
    return Tag(text, "passed") if accepted == len(cell["gates"]) else Tag(text, "failed")


def section(doc: Document, ledger: dict) -> None:
    table = ledger["coverage"]
    doc.add(Heading(2, "Coverage by gate class", "coverage", collapsed=True))
    if not table["available"]:
        doc.add(Para("Not shown: the gate suite was not run (--no-gates), so the gates' classes are unknown."))
        return
    doc.add(Para("Per mechanism, which classes of gate hold it, and whether each of those gates is accepted "
                 "(seen red by its own assertion under a perturbation and green after). A class is named in the "
                 "gate's marker, gate_class=."))
    doc.add(Bullets(tuple((Code(name), f": {promise}") for name, promise in table["classes"].items())))
    classes = tuple(table["classes"])
    doc.add(Table(("mechanism", *classes),
                  tuple((Code(r["mechanism"]), *(_coverage_cell(r["cells"][c]) for c in classes))
                        for r in table["rows"])))
