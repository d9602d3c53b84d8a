"""check stage: blind spots. Every blind spot `fidelity discover` recorded in the project's own
code must be closed by a gate (re-run discover: it becomes killed) or explained beside the
equation it touches (an `equivalent:` or `out_of_scope:` entry naming `module:key`).

A stale record (the module, the gates that cover it or the discovery code changed since) is no
pass: what it found described code that is no longer there, and an edit can open blind spots
it never saw. The stage is RED for that module, as stale perturbation evidence is, naming
`fidelity discover --stale`; what the stale record found still counts too (its blind spots are
not forgotten because the code moved). Records of other subjects (`discover --subject`) are findings about those packages,
reported by the ledger, not by this verdict. An undecided mutant (no gate red and no probe reached
its code) is a survivor nobody has judged: it fails the check as a blind spot does, until a gate
that runs its code kills it or an entry beside its equation explains it; it is never called
equivalent. A mutant a gate killed though an `equivalent:` entry calls it equivalent is RED too (the
gate or the entry is wrong); an `out_of_scope:` entry whose mutant a gate now kills is a note: it can go.
"""
from __future__ import annotations

from fidelity import project
from fidelity.discover import explanations as explained
from fidelity.discover import records

SURVIVORS = {"blind_spot": "blind spot", "undecided": "undecided mutant"}
"""The outcomes no gate killed and no probe called equivalent, as a message names them: each fails the
check until a gate kills it or an entry beside its equation explains it."""


def stale_problem(module: str, reasons: list[str]) -> str:
    return (f"the discovery record of {module} is stale ({'; '.join(reasons)}): it judged code that is not there "
            f"now; run `fidelity discover --stale` (or `fidelity discover --module {module}`)")


def contradicted_equivalence(full: str, why: explained.Explanation, killed_by: list[str]) -> str:
    """A gate red on a mutant the spec calls equivalent: one of the two is wrong, and which decides what a user
    of the gate is told. Never a note that the entry can go: deleting a true equivalence hides a gate that
    would call a faithful package a finding (one reading rounding of a cancelled sum as a difference did)."""
    return (f"{full} is explained as equivalent beside {why.equation} ({why.where}), but {', '.join(killed_by)} "
            f"went red on it: a gate red on a variant its equation allows would call a faithful package a finding. "
            f"Find which is wrong: the gate (does it hold more than the equation states, or read rounding as a "
            f"difference?) or the entry (then remove it)")


def run(cat, args, say, index=None) -> dict:
    """The stage's verdict; `index`: a callable giving the gate suite's index (records.HashesNow's)."""
    here = project.current()
    problems, notes, rows = [], [], []
    try:
        recs = records.judged(here.reports, here.root, [here.relative(here.gates)], index=index)
        explanations = explained.from_catalogue(cat)
    except (records.CorruptRecord, explained.DuplicateExplanation) as exc:
        say(f"discovery RED  {exc}")
        return {"stage": "discovery", "ok": False, "problems": [str(exc)], "notes": [], "records": []}
    used = set()
    for rec, stale in recs:
        module = rec["module"]
        if stale:
            problems.append(stale_problem(module, stale))
        keys = set()
        survivors = {outcome: [] for outcome in SURVIVORS}
        for m in rec["mutants"]:
            full = explained.name(module, m["key"])
            keys.add(full)
            if m["outcome"] not in SURVIVORS:
                if full in explanations:
                    if explanations[full].kind == "equivalent" and m["outcome"] == "killed":
                        problems.append(contradicted_equivalence(full, explanations[full], m["killed_by"]))
                    else:
                        notes.append(f"{full} is explained beside {explanations[full].equation} but is "
                                     f"{m['outcome']} now: the entry can go")
                    used.add(full)
                continue
            why = explanations.get(full)
            survivors[m["outcome"]].append(
                {"mutant": full, "id": m["id"], "line": m["line"], "operator": m["operator"],
                 "description": m["description"],
                 "explained": None if why is None else {"kind": why.kind, "reason": why.reason,
                                                        "equation": why.equation}})
            if why is None:
                problems.append(f"unexplained {SURVIVORS[m['outcome']]} {full} ({m['id']}, line {m['line']}, "
                                f"{m['operator']}: {m['description']}): close it with a gate that runs this code, "
                                f"or explain it beside its equation (equivalent: / out_of_scope: with mutant: {full})")
            else:
                used.add(full)
        if not stale:  # an entry naming a mutant a current record does not have explains nothing
            for full in sorted(k for k in explanations if k.startswith(module + ":") and k not in keys):
                problems.append(f"{full} is explained beside {explanations[full].equation} "
                                f"({explanations[full].where}), but the current discovery record of {module} "
                                f"has no such mutant: remove or correct the entry")
                used.add(full)
        counts = {}
        for m in rec["mutants"]:
            counts[m["outcome"]] = counts.get(m["outcome"], 0) + 1
        rows.append({"module": module, "file": rec["_file"], "current": not stale, "stale_reasons": stale,
                     "counts": counts, "blind_spots": survivors["blind_spot"], "undecided": survivors["undecided"]})
    for msg in problems[:40]:
        say(f"discovery RED  {msg}")
    if len(problems) > 40:
        say(f"discovery ... and {len(problems) - 40} more")
    for msg in notes:
        say(f"discovery note {msg}")
    total = {}
    for row in rows:
        for k, v in row["counts"].items():
            total[k] = total.get(k, 0) + v
    shown = ", ".join(f"{v} {k}" for k, v in sorted(total.items())) or "no mutants"
    listed = [b for r in rows for b in r["blind_spots"] + r["undecided"]]
    stale = [r["module"] for r in rows if not r["current"]]
    say(f"discovery {'ok ' if not problems else 'RED'}  {len(rows)} modules recorded"
        + (f" ({len(stale)} stale: {', '.join(stale)})" if stale else "") + f": {shown}; "
        f"{sum(1 for b in listed if b['explained'])} blind spots and undecided explained, "
        f"{sum(1 for b in listed if not b['explained'])} unexplained")
    return {"stage": "discovery", "ok": not problems, "problems": problems, "notes": notes, "records": rows}
