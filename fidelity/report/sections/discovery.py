"""Blind spots found by discovery: per paper the modules its equations name, the modules no
paper names, other subjects' modules, and those shown under a third-party package's findings.
"""
from __future__ import annotations

from fidelity.report.anchors import eq_ref, mutant_id, mutant_ref
from fidelity.report.blocks import Bullets, Code, Document, Heading, Para, Strong, Table, Tag, Target, anchor
from fidelity.report.discovery import OUTCOMES as DISCOVERY_OUTCOMES
from fidelity.report.discovery import witness_text
from fidelity.report.inline import DASH, codes, eq_refs, gate_codes, num


_DISCOVERY_TAG = {"killed": ("killed", "passed"), "error": ("error", "other"), "equivalent": ("equivalent", "skipped"),
                  "blind_spot": ("blind spot", "failed"), "undecided": ("undecided", "other")}


NO_DISCOVERY = ("no discovery run recorded (run ", Code("fidelity discover"), ")")


def discovery_tag(outcome: str):
    text, kind = _DISCOVERY_TAG.get(outcome, (outcome, "other"))
    return Tag(text, kind)


def _rediscover(e: dict) -> tuple:
    cmd = f"fidelity discover --module {e['module']}" + (f" --subject {e['subject']}" if e["subject"] else "")
    return Code(cmd)


def _record_state(e: dict) -> tuple:
    if e["current"] is True:
        return (Tag("current", "passed"), ": the module's source, the gates and the discovery code are as recorded")
    if e["current"] is False:
        return (Tag("STALE", "stale"), ": " + "; ".join(e["stale_reasons"]) + ". What it found still stands until "
                "a new run; refresh it with ", _rediscover(e))
    return (Tag("currency unknown", "other"), ": " + "; ".join(e["stale_reasons"]))


def _explanation_cell(m: dict):
    x = m["explanation"]
    if x is not None:
        return (Tag("explained", "passed"), f" ({x['kind']}, beside ", eq_ref(x["equation"]), "): " + x["reason"])
    if m["outcome"] == "blind_spot":
        return (Tag("UNEXPLAINED", "failed"), ": close it with a gate, or explain it beside its equation "
                                              "(equivalent: / out_of_scope: naming " + m["name"] + ")")
    return "not a blind spot yet: no probe reached it (never counted as equivalent)"


def _discovered_module(doc: Document, e: dict, level: int, anchor_id: str, *, ours: bool = True,
                       anchored: bool = True) -> None:
    """`anchored`: its mutants' rows carry their ids (False where the module is shown again, under a second
    paper naming it: there each mutant links to the row that carries it)."""
    doc.add(Heading(level, e["module"] + (f" ({e['subject']}, third party)" if e["subject"] else ""), anchor_id))
    lead = ["Record ", Code(e["record"]), ", recorded ", e["recorded_at"] or DASH]
    if e["target_file"]:
        lead += [", of ", Code(e["target_file"])]
    if ours:
        lead += ["; named by ", eq_refs(e["equations"], "no equation")]
    doc.add(Para(tuple(lead) + (". ",) + _record_state(e)))
    extra = sorted(o for row in e["counts"].values() for o in row if o not in DISCOVERY_OUTCOMES)
    outcomes = [*DISCOVERY_OUTCOMES, *dict.fromkeys(extra)]
    rows = [(Code(op), *[str(row.get(o, 0)) for o in outcomes], str(sum(row.values())))
            for op, row in e["counts"].items()]
    rows.append((Strong("total"), *[str(e["totals"].get(o, 0)) for o in outcomes], str(sum(e["totals"].values()))))
    doc.add(Table(("operator", *[_DISCOVERY_TAG.get(o, (o,))[0] for o in outcomes], "total"), tuple(rows)))
    dropped = {k: v for k, v in e["dropped"].items() if v}
    if dropped:
        doc.add(Para("Dropped before running (not counted): " + ", ".join(f"{v} {k.replace('_', ' ')}"
                                                                          for k, v in dropped.items()) + "."))
    if e["gates_set_aside"]:
        doc.add(Para(("Gates set aside (red before any mutant, so they cannot tell one apart): ",
                      gate_codes(e["gates_set_aside"]))))
    listed = [m for m in e["mutants"] if m["outcome"] in ("blind_spot", "undecided")]
    s = e["summary"]
    if not listed:
        doc.add(Para(f"No blind spot and nothing undecided among the {s['mutants']} mutants."))
        return
    if ours:
        doc.add(Para(f"{s['blind_spots']} blind spots ({s['explained']} explained, {s['unexplained']} unexplained) "
                     f"and {s['undecided']} undecided:"))
    else:
        doc.add(Para(f"{s['blind_spots']} blind spots and {s['undecided']} undecided in {e['subject']}'s code: "
                     "findings about that package, counted in no verdict of ours:"))
    head = ("mutant", "id", "line", "function", "operator", "description", "outcome", "witness")
    rows = []
    for m in sorted(listed, key=lambda m: (m["line"] or 0, m["name"])):
        name = (Target(mutant_id(m["name"], e["subject"]), Code(m["name"])) if anchored
                else mutant_ref(m["name"], e["subject"]))
        row = (name, Code(m["id"] or DASH), num(m["line"]), Code(m["function"]) if m["function"] else DASH,
               Code(m["operator"]), m["description"] or DASH, discovery_tag(m["outcome"]), witness_text(m))
        rows.append(row + ((_explanation_cell(m),) if ours else ()))
    doc.add(Table(head + (("explanation",) if ours else ()), tuple(rows)))


def _first_paper_naming(ledger: dict, module: dict) -> str | None:
    """The paper, in page order, under which a module several papers name is shown with its mutants' ids."""
    return next((q["id"] for q in ledger["papers"] if q["id"] in module["papers"]), None)


def section(doc: Document, p: dict, ledger: dict) -> None:
    d = ledger["discovery"]
    doc.add(Heading(3, "Blind spots found by discovery", anchor(p["id"], "discovery"), collapsed=True))
    if d["error"]:
        doc.add(Para(("The discovery records cannot be used: ", d["error"])))
        return
    mods = p["discovery"]["modules"]
    if not mods:
        doc.add(Para(("No equation of this paper names code (", Code("code:"), "): there is no module of it to "
                      "mutate.")))
        return
    if not d["records"]:
        doc.add(Para(("Mutants of the code this paper's equations name (", codes(mods), "): ", *NO_DISCOVERY, ".")))
        return
    doc.add(Para(("Mutants ", Code("fidelity discover"), " made of the modules this paper's equations name (",
                  Code("code:"), "), from its records: each module's counts per operator and outcome, and every "
                  "blind spot and undecided mutant.")))
    missing = [m for m in mods if m not in d["modules"]]
    for m in mods:
        if m in d["modules"]:
            e = d["modules"][m]
            _discovered_module(doc, e, 4, anchor(p["id"], "discovery", m), anchored=p["id"] == _first_paper_naming(ledger, e))
    if missing:
        doc.add(Para(Strong("Not recorded")))
        doc.add(Bullets(tuple((Code(m), ": no discovery run recorded (run ", Code(f"fidelity discover --module {m}"),
                               ")") for m in missing)))


def unclaimed(doc: Document, ledger: dict) -> None:
    d = ledger["discovery"]
    if d["error"] or not d["unclaimed"]:
        return
    doc.add(Heading(2, "Blind spots in modules no paper names", "discovery-unclaimed"))
    doc.add(Para(("Discovery records of modules of ours that no equation's ", Code("code:"), " names: no paper "
                  "claims this code, so no equation can explain its blind spots until one names it.")))
    for m in d["unclaimed"]:
        _discovered_module(doc, d["modules"][m], 3, anchor("discovery", m))


def other_subjects(doc: Document, ledger: dict) -> None:
    d = ledger["discovery"]
    others = [o for o in d["other_subjects"] if not o["in_third_party"]]
    if d["error"] or not others:
        return
    doc.add(Heading(2, "Blind spots in other subjects", "discovery-other-subjects"))
    doc.add(Para(("Mutants of someone else's package (", Code("fidelity discover --subject NAME"), "): a blind spot "
                  "there is about that package, never a failure of this project, and counts in no verdict of ours.")))
    for o in others:
        doc.add(Heading(3, f"Blind spots in {o['subject']} (third party)", anchor("discovery", o["subject"])))
        for e in o["modules"]:
            _discovered_module(doc, e, 4, anchor("discovery", o["subject"], e["module"]), ours=False)


def in_third_party(doc: Document, ledger: dict, name: str) -> None:
    for o in ledger["discovery"]["other_subjects"]:
        if o["subject"] == name and o["in_third_party"] and not ledger["discovery"]["error"]:
            doc.add(Para((Strong(f"Blind spots found in {name} by discovery"), " (", Code(f"fidelity discover "
                          f"--subject {name}"), "): about that package, counted in no verdict of ours.")))
            for e in o["modules"]:
                _discovered_module(doc, e, 4, anchor("third-party", name, "discovery", e["module"]), ours=False)
