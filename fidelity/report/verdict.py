"""The verdict at the top of the ledger: three questions a reader asks, answered apart.

1. Is the implementation faithful? Gates, evidence, perturbations caught, blind spots.
2. Which numbers in the sources are wrong? Refuted claims: a finding about the paper (or
   the document that states the number), never a failure of the implementation (README,
   "claims"), so they never make the first answer "no".
3. Which perturbations do the fixtures tell apart only weakly? A separation (the distance
   from the right value to a perturbation's predicted value, in the gate's tolerances)
   under 10: a thin margin; at 0 that fixture cannot tell the perturbation apart at any
   tolerance, and other gates must catch it. A weakness of the checks, not of the
   implementation.

One sentence each, with the papers it concerns linked to their sections, so a newcomer
reads each answer for what it is and knows where to look next.
"""
from __future__ import annotations

from fidelity.evidence import jsonio
from fidelity.report.blocks import Link, Para, Strong, Tag, anchor

FAITHFUL_Q = "Is the implementation faithful?"
SOURCES_Q = "Which numbers in the papers are wrong?"
WEAK_Q = "Which perturbations do the fixtures tell apart only weakly?"


def _verb(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def discovery_counts(ledger: dict, paper: str | None = None) -> dict:
    """What discovery found in the project's own modules (those of `paper`'s equations, or all):
    blind spots, how many of them no entry explains, and undecided mutants."""
    entries = [e for e in ledger.get("discovery", {}).get("modules", {}).values()
               if paper is None or paper in e["papers"]]
    return {k: sum(e["summary"][k] for e in entries) for k in ("blind_spots", "unexplained", "undecided")}


def totals(ledger: dict) -> dict:
    keys = ("implemented", "deviates", "implemented_accepted", "gates", "gates_accepted", "claims_confirmed",
            "claims_refuted", "claims_unchecked", "perturbations", "blind_spots", "weak")
    return {k: sum(s[k] for s in ledger["summary"]) for k in keys}


def _per_paper(ledger: dict, key: str, section: str) -> tuple:
    """' (paper N, paper M)': each paper with a count of `key`, linked to its `section`."""
    items = [(Link(f"{s['paper']}: {s[key]}", "#" + anchor(s["paper"], section)),)
             for s in ledger["summary"] if s[key]]
    out: list = [" ("]
    for i, item in enumerate(items):
        out += [", ", *item] if i else list(item)
    return tuple(out + [")"])


def faithful(ledger: dict) -> tuple[bool, str]:
    """(shown faithful as far as checked, the answer): gates, perturbations, discovery; no claim, no separation."""
    t = totals(ledger)
    claimed = t["implemented"] + t["deviates"]
    caught = t["perturbations"] - t["blind_spots"]
    open_items = []
    if t["implemented_accepted"] < claimed:
        lacking = claimed - t["implemented_accepted"]
        open_items.append(f"{lacking} of {claimed} implemented equations {_verb(lacking, 'has', 'have')} no "
                          "accepted gate (a gate seen red under a perturbation and green without it)")
    if t["blind_spots"]:
        open_items.append(f"{t['blind_spots']} of {t['perturbations']} perturbations "
                          f"{_verb(t['blind_spots'], 'is a blind spot', 'are blind spots')}: no gate caught "
                          f"{_verb(t['blind_spots'], 'it', 'them')}")
    found = discovery_counts(ledger)
    if found["unexplained"] or found["undecided"]:
        open_items.append(f"discovery left {found['unexplained']} blind spots unexplained and "
                          f"{found['undecided']} mutants undecided")
    if not open_items:
        return True, (f"Yes, as far as checked: each of the {claimed} implemented equations is held by an accepted "
                      f"gate (seen red under a perturbation, green without it), all {caught} perturbations were "
                      "caught, and discovery left no blind spot unexplained.")
    return False, "Not yet shown: " + "; ".join(open_items) + "."


def blocks(ledger: dict) -> list:
    """The three answers, one paragraph each."""
    good, answer = faithful(ledger)
    t = totals(ledger)
    stated = t["claims_confirmed"] + t["claims_refuted"] + t["claims_unchecked"]
    if t["claims_refuted"]:
        sources = (Tag(f"{t['claims_refuted']} refuted", "other"), " ", Strong(SOURCES_Q), " ",
                   f"{t['claims_refuted']} of the {stated} numbers the papers state "
                   f"{_verb(t['claims_refuted'], 'is', 'are')} refuted by the oracles",
                   *_per_paper(ledger, "claims_refuted", "claims"),
                   ". A refuted number is a finding about the paper, not a failure of the implementation: "
                   f"the oracles compute a different value. {t['claims_confirmed']} "
                   f"{_verb(t['claims_confirmed'], 'is', 'are')} confirmed, {t['claims_unchecked']} unchecked.")
    else:
        sources = (Tag("none refuted", "passed"), " ", Strong(SOURCES_Q), " ",
                   f"None that was checked: of the {stated} numbers the papers state, {t['claims_confirmed']} "
                   f"{_verb(t['claims_confirmed'], 'is', 'are')} confirmed by the oracles and "
                   f"{t['claims_unchecked']} unchecked.")
    if t["weak"]:
        zero = sum(1 for p in ledger["papers"] for r in p["separations"]
                   if r["weak"] and r["separation"] is not None and jsonio.decode_float(r["separation"]) == 0)
        weak = (Tag(f"{t['weak']} weak", "other"), " ", Strong(WEAK_Q), " ",
                f"{t['weak']} {_verb(t['weak'], 'separation', 'separations')} (the distance from the right value "
                f"to a perturbation's predicted value, in the gate's tolerances) {_verb(t['weak'], 'is', 'are')} "
                "under 10", *_per_paper(ledger, "weak", "weak-gates"),
                f", {zero} of them 0. Under 10 the margin is thin; at 0 the fixture's predicted wrong value is the "
                "right one, so that fixture cannot tell the perturbation apart at any tolerance and other gates "
                "must catch it. A weakness of the checks, not a failure of the implementation.")
    else:
        weak = (Tag("none weak", "passed"), " ", Strong(WEAK_Q), " ",
                "None: every computed separation is at least 10 tolerances.")
    return [Para((Tag("faithful" if good else "not yet shown faithful", "passed" if good else "failed"), " ",
                  Strong(FAITHFUL_Q), " ", answer)),
            Para(sources), Para(weak)]
