"""The ledger as a page: the gathered data (model.gather) laid out as blocks, section by section
(each section is a module of fidelity.report.sections; this one only puts them in order).

After the summary and the subjects come the findings about third-party subjects
(only when the gate run holds runs of someone else's packages; the blind spots
`fidelity discover --subject` recorded in such a package sit under its findings), then
"Blind spots in other subjects" for the recorded packages the third-party part does not
hold. Order per paper: provenance, equations, deltas, claims, subject matrix (with a
column per third-party package whose gates cover the paper), red to green, blind spots
(the perturbations'), blind spots found by discovery (per module the paper's equations
name: counts per operator and outcome, whether the record is current, and every blind
spot and undecided mutant with its witness and the spec's explanation or UNEXPLAINED),
weak gates, and the claim ledger in four parts (Sourced, Measured, Transcription, Not
claimed). After the papers: blind spots in recorded modules no paper names.
Observations and predictions sit in separate columns, and every red-to-green row says
which one it is.
"""
from __future__ import annotations

from fidelity.report import performance
from fidelity.report.blocks import Document, Heading, anchor
from fidelity.report.sections import (blind_spots, claim_ledger, claims, coverage, discovery, equations, gates,
                                      outside, perturbations, red_to_green, subjects, summary, third_party, weak_gates)
from fidelity.report.sections import plots as plot_section


def _paper(doc: Document, p: dict, ledger: dict) -> None:
    doc.add(Heading(2, f"{p['provenance']['title']} ({p['id']})", anchor("paper", p["id"])))
    for part in (equations.provenance, equations.table, equations.deltas):
        part(doc, p)
    perturbations.section(doc, p, ledger)
    gates.matrix(doc, p, ledger)
    for part in (claims.section, subjects.matrix, red_to_green.section, blind_spots.section):
        part(doc, p)
    discovery.section(doc, p, ledger)
    for part in (weak_gates.section, claim_ledger.section):
        part(doc, p)


def build(ledger: dict, *, plots: bool = True) -> Document:
    doc = Document("fidelity ledger")
    summary.section(doc, ledger)
    third_party.glance(doc, ledger)
    summary.how_to_read(doc, ledger)
    if plots:
        plot_section.section(doc, ledger)
    subjects.section(doc, ledger)
    coverage.section(doc, ledger)
    gates.catalogue(doc, ledger)
    third_party.section(doc, ledger)
    discovery.other_subjects(doc, ledger)
    for p in ledger["papers"]:
        _paper(doc, p, ledger)
    discovery.unclaimed(doc, ledger)
    outside.section(doc, ledger)
    performance.section(doc, ledger)
    return doc
