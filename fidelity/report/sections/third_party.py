"""Findings about third-party subjects: the glance at the top of the page (failing gates per
package) and the section (per package: findings, errors, differences from our choices,
equations not run, and the blind spots discovery found in it).
"""
from __future__ import annotations

from fidelity.report.anchors import eq_ref, finding_id, gate_ref, gate_short
from fidelity.report.blocks import Bullets, Code, Document, Heading, Link, Para, Ref, Strong, Table, Target, anchor
from fidelity.report.inline import DASH, codes, eq_refs, joined, reading
from fidelity.report.ledger.terms import CHOICE, ERROR, FINDING
from fidelity.report.sections import discovery


def _findings_by_gate(t: dict, outcomes: tuple[str, ...] = (FINDING, ERROR)) -> dict[str, list[dict]]:
    """{gate: [equations it found something about]} for one third-party subject, counting the failures of
    `outcomes` (findings and errors; or, apart, differences from our choices)."""
    out: dict[str, list[dict]] = {}
    for e in t["equations"]:
        for gate in sorted({f["gate"] for f in e["findings"] if f.get("outcome", FINDING) in outcomes}):
            out.setdefault(gate, []).append(e)
    return dict(sorted(out.items()))


def glance(doc: Document, ledger: dict) -> None:
    third = ledger.get("third_party")
    if not third:
        return
    doc.add(Heading(3, "Third-party findings by failing gate", "third-party-glance"))
    items = []
    for t in third:
        by_gate = _findings_by_gate(t)
        if not by_gate:
            items.append((Link(t["name"], "#" + anchor("third-party", t["name"])), ": no finding"))
            continue
        gates = joined([(Ref(gate_short(g), finding_id(t["name"], g), g), f" ({len(eqs)})")
                        for g, eqs in by_gate.items()])
        items.append((Link(t["name"], "#" + anchor("third-party", t["name"])),
                      f": {len(by_gate)} gates failed on {len({e['equation'] for es in by_gate.values() for e in es})} "
                      "equations (equations per gate in brackets): ", gates))
    doc.add(Bullets(tuple(items)))


def _how(f: dict) -> str:
    if f.get("kind") == "assertion":
        return "the gate's assertion"
    exc = (f.get("exc_type") or "an error").rsplit(".", 1)[-1]
    return f"raised {exc}"


def _readings_text(readings: dict):
    if not readings:
        return DASH
    return joined([(f"{k} = ", reading(v)) for k, v in sorted(readings.items())])


def _finding_rows(t: dict) -> list[tuple]:
    """One row per failing gate (a finding or an error), with the equations it found something about, its
    failed instances, and the first one's reading and message."""
    rows = []
    for gate, eqs in _findings_by_gate(t).items():
        fs = [f for e in eqs for f in e["findings"] if f["gate"] == gate and f.get("outcome", FINDING) != CHOICE]
        first = fs[0]
        instances = codes(sorted({f["instance"] for f in fs if f["instance"]}))
        rows.append((Target(finding_id(t["name"], gate), gate_ref(gate)), eq_refs([e["equation"] for e in eqs]),
                     instances, _how(first), _readings_text(first["readings"]), first["message"] or DASH))
    return rows


def _choice_rows(t: dict) -> list[tuple]:
    """One row per gate that failed only where it compares a choice of ours: the tier-c items, our values, and
    what the gate compared (the first instance's message)."""
    rows = []
    for gate, eqs in _findings_by_gate(t, (CHOICE,)).items():
        fs = [f for e in eqs for f in e["findings"] if f["gate"] == gate and f.get("outcome") == CHOICE]
        items = {c["id"]: c for f in fs for c in f.get("choices", [])}
        ours = joined([(Ref(i, eq_ref(i)), f" = {c['ours']}" if c["ours"] is not None else "")
                       for i, c in sorted(items.items())])
        instances = codes(sorted({f["instance"] for f in fs if f["instance"]}))
        rows.append((gate_ref(gate), ours, instances, fs[0]["message"] or DASH))
    return rows


def _third_party_choices(doc: Document, t: dict) -> None:
    rows = _choice_rows(t)
    if not rows:
        return
    doc.add(Para((Strong(f"Differs from our choice on {t['name']}"), ": these gates failed only where they compare "
                  "a value the paper does not state (a tier-c item: our choice, held against our own reference). "
                  "A package that chose otherwise has not departed from the paper; not a finding.")))
    doc.add(Table(("gate", "our choice (tier c)", "instances", "what the gate compared"), tuple(rows)))


def section(doc: Document, ledger: dict) -> None:
    third = ledger.get("third_party")
    if third is None:
        return
    doc.add(Heading(2, "Findings about third-party subjects", "third-party"))
    doc.add(Para(("Someone else's implementation held to the same gates, each package in a gate run of its own on "
                  "that package alone (", Code("fidelity report --subject NAME"), "; the verdicts are those of ",
                  Code("fidelity check --subject NAME"), "). A ", Strong("finding"), " is a gate whose own assertion "
                  "failed on that package, an ", Strong("error"), " one where the package raised instead of "
                  "answering: either is about the package, never a failure of this project, and counts in no verdict "
                  "of ours (not in the summary, the acceptance of a gate, or any exit code).")))
    if not third:
        doc.add(Para("No third-party subject was run."))
        return
    doc.add(Table(("subject", "reference", "package versions", "available here", "gates run",
                   "equations passed", "with findings", "with errors", "differing from our choice", "not run"),
                  tuple((Link(t["name"], "#" + anchor("third-party", t["name"])), Code(t["reference"] or DASH),
                         ", ".join(f"{d} {v}" for d, v in t["versions"].items()) or DASH,
                         "yes" if t["available"] else f"no: {t['reason']}", str(t["gates"]), str(t["passed"]),
                         str(t["findings"]), str(t.get("errors", 0)), str(t.get("differs_from_our_choice", 0)),
                         str(t["not_run"])) for t in third)))
    for t in third:
        doc.add(Heading(3, f"Findings about {t['name']} (third party)", anchor("third-party", t["name"]),
                        collapsed=True))
        doc.add(Para((Code(t["name"]), ": " + (t["description"] or "no description") + ".")))
        if not t["available"]:
            doc.add(Para(("Not available where the gate suite ran: ", t["reason"] or "no reason given",
                          ". Every gate of it is not run; nothing is said about the package.")))
        rows = _finding_rows(t)
        if rows:
            doc.add(Para(f"{t['findings']} equations with findings about {t['name']}: one row per gate that "
                         "failed, with the equations and the instances it failed on; the reading (the number the "
                         "gate compared) and the message are the first failed instance's (every instance's are in "
                         "ledger.json)."))
            doc.add(Table(("gate", "equations", "failed instances", "failed by", "reading", "message"), tuple(rows)))
        elif t["available"]:
            doc.add(Para(f"No finding: every gate that ran on {t['name']} passed." if t["passed"] else
                         f"No finding, and no gate passed on {t['name']} either."))
        _third_party_choices(doc, t)
        by_reason: dict[str, list[str]] = {}
        for e in t["equations"]:
            if e["verdict"] == "not run":
                for r in e["not_run_reasons"] or ["no reason given"]:
                    by_reason.setdefault(r, []).append(e["equation"])
        if by_reason:
            doc.add(Para(Strong(f"Not run on {t['name']}: equations no gate could drive on it, by reason")))
            doc.add(Bullets(tuple((r, ": ", codes(eqs)) for r, eqs in sorted(by_reason.items()))))
        discovery.in_third_party(doc, ledger, t["name"])
