"""check stage: acceptance. Every gate must have CURRENT evidence of going red by its
own assertion (and green after); every implemented equation must be covered by an
accepted gate; every perturbation must be caught by at least one gate.

Evidence is current only while the hashes of the gate's file, the target's source,
the fixtures it read and the perturbation's edits all match what ran.
A problem that only stale evidence causes (its stale record accepted the gate when it ran) is
said as one line per target module after the real failures (stale_evidence.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fidelity import cache, project
from fidelity.check import stale_evidence
from fidelity.check.stale_evidence import Problem
from fidelity.evidence import listed_gates, paths, read_memo, store, verdict
from fidelity.evidence.record import CLEAN_RUNS
from fidelity.spec.catalogue import perturbation_order


def _entry(j: verdict.Judged) -> dict:
    r = j.record
    entry = {"perturbation": r.perturbation, "outcome": r.outcome.value, "reading": r.reading,
             "predicted": r.predicted, "green_after": r.green_after, "clean_runs": r.clean_runs,
             "shortfall": "" if r.accepted else r.shortfall()}
    return entry if j.current else {**entry, "reasons": list(j.stale_reasons)}


def gate_acceptance(cat, reports_dir: Path | None = None, root: Path | None = None,
                    records: list | None = None) -> tuple[dict, dict]:
    """(gate -> acceptance row, perturbation -> caught_by) from the evidence under `reports_dir`
    (or its `records`, already loaded), hashed against the project at `root` (default: the current
    project's), by fidelity.evidence.verdict."""
    if reports_dir is None or root is None:
        here = project.current()
        reports_dir = here.reports if reports_dir is None else reports_dir
        root = here.root if root is None else root
    perturbations = _perturbations(cat)
    if records is None:
        records = store.load_all(paths.evidence_root(reports_dir))
    judged = verdict.judge(records, root, perturbations)
    return _acceptance(judged, perturbations)


def _perturbations(cat) -> dict[str, dict]:
    return {p.id: {**p.data} for p in cat.perturbations.values()}


def _acceptance(judged: list[verdict.Judged], perturbations: dict[str, dict]) -> tuple[dict, dict]:
    gates = {g: {"accepted": v.accepted, "by": [_entry(j) for j in v.by], "stale": [_entry(j) for j in v.stale],
                 "not_red": [_entry(j) for j in v.not_red]}
             for g, v in verdict.by_gate(judged).items()}
    caught = verdict.caught_by(judged, perturbations)
    return gates, {pid: caught[pid] for pid in perturbations}


def why_not_accepted(acc: dict) -> str:
    """Why a gate is not accepted, in the words the text output shows (--json has every record):
    what its current records show, then which are stale and why."""
    parts = []
    if acc.get("not_red"):
        shown = ", ".join(f"{e['perturbation']}: {e['shortfall']}" for e in acc["not_red"][:3])
        parts.append(f"never red by its own assertion with green after {CLEAN_RUNS} clean runs in its current "
                     f"evidence ({shown})")
    if acc["stale"]:
        shown = "; ".join(f"{e['perturbation']}: {', '.join(e['reasons'])}" for e in acc["stale"][:3])
        more = f"; and {len(acc['stale']) - 3} more" if len(acc["stale"]) > 3 else ""
        parts.append(f"{'only ' if not parts else ''}stale evidence: {shown}{more}")
    return "; ".join(parts) or "never seen red: no perturbation has run that lists or covers it"


def what_to_run(acc: dict) -> str:
    """What to do for a gate that is not accepted: with stale or missing evidence, re-run it; with
    only current evidence that refuses it, re-running changes nothing until the gate (or the
    perturbation) does, and every perturbation concerned is named."""
    if acc["stale"] or not acc["not_red"]:
        return "run `fidelity perturb --stale`"
    concerned = sorted({e["perturbation"] for e in acc["not_red"]}, key=perturbation_order)
    return (f"its evidence is current, so running it again as it is changes nothing: strengthen the gate (or "
            f"correct the perturbation), then run `fidelity perturb {' '.join(concerned)}`")


@dataclass(frozen=True)
class JudgedEvidence:
    """The project's records judged against the project as it is now: what the stage decides from
    before the gate suite reports (check judges them while the suite runs)."""
    spec_of: dict[str, dict]
    judged: list
    bad: list


def judge_evidence(cat) -> JudgedEvidence:
    here = project.current()
    # light: check judges records and never renders one (~180 MB of whole records in this process, 0.25 s to load)
    records, bad = store.scan(here.evidence, memo=read_memo.folder(cache.cache_dir(here.root)), light=True)
    spec_of = _perturbations(cat)
    return JudgedEvidence(spec_of, verdict.judge(records, here.root, spec_of), bad)


def run(cat, args, say, gate_rows: list[dict] | None = None, evidence: JudgedEvidence | None = None) -> dict:
    """The stage's verdict on the gate suite's `gate_rows`, from `evidence` (default: judged now). The text
    says the real failures first and stale evidence as one line per target module (stale_evidence.py);
    the result keeps every problem's sentence."""
    here = project.current()
    evidence = evidence or judge_evidence(cat)
    spec_of, judged, bad = evidence.spec_of, evidence.judged, evidence.bad
    acceptance, caught = _acceptance(judged, spec_of)
    gate_rows = gate_rows or []
    stale = stale_evidence.StaleAcceptances(judged)
    # a record that cannot be read is named, never skipped: another record may accept its gate,
    # but nobody can say what the bad one held
    problems = [Problem(f"evidence record {here.relative(f)} is not valid ({why}): {todo}") for f, why, todo in bad]
    problems += _gate_problems(gate_rows, acceptance, stale)
    # what the runner refuses though another perturbation accepts the gate: a listed gate not red under
    # its perturbation, a gate name the suite does not have (judged only when the suite was collected)
    known = {row["gate"] for row in gate_rows} if gate_rows else None
    refused = listed_gates.refusals(spec_of, judged, known)
    problems += [_refusal_problem(r, stale) for r in refused]
    equations, uncovered = _equations(cat, gate_rows, stale)
    problems += uncovered
    perturbations, uncaught = _perturbation_rows(cat, caught, refused, stale)
    problems += uncaught
    for line in stale_evidence.text_lines(problems, limit=40):
        say(f"evidence  RED  {line}")
    accepted = sum(1 for r in gate_rows if r.get("accepted"))
    say(f"evidence  {'ok ' if not problems else 'RED'}  {accepted}/{len(gate_rows)} gates accepted, "
        f"{sum(1 for p in perturbations if p['caught_by'])}/{len(perturbations)} perturbations caught"
        + (f", {len(refused)} listed gates refused" if refused else ""))
    return {"stage": "evidence", "ok": not problems, "problems": [p.text for p in problems],
            "stale_evidence": stale_evidence.by_module(problems), "equations": equations,
            "perturbations": perturbations}


def _gate_problems(gate_rows: list[dict], acceptance: dict, stale: stale_evidence.StaleAcceptances) -> list[Problem]:
    """Marks each row accepted or not (and by what); a problem per gate not accepted."""
    out = []
    for row in gate_rows:
        acc = acceptance.get(row["gate"], {"accepted": False, "by": [], "stale": [], "not_red": []})
        row["accepted"] = acc["accepted"]
        row["accepted_by"] = sorted({e["perturbation"] for e in acc["by"]})
        row["stale_evidence"] = acc["stale"]
        if not acc["accepted"]:
            out.append(Problem(f"gate {row['gate']} is not accepted ({why_not_accepted(acc)}): {what_to_run(acc)}",
                               "gate", tuple(stale.of_gate.get(row["gate"], ()))))
    return out


def _refusal_problem(r: listed_gates.Refusal, stale: stale_evidence.StaleAcceptances) -> Problem:
    """A refused listed gate is stale-caused when its record under the perturbation is stale and accepted it."""
    j = stale.of_pair.get((r.perturbation, r.gate)) if r.why == "no current record" else None
    return Problem(r.sentence(), "listed gate", (j,) if j else ())


def _equations(cat, gate_rows: list[dict], stale: stale_evidence.StaleAcceptances) -> tuple[list[dict], list[Problem]]:
    """Each equation with the accepted gates that cover it; a problem per implemented one none covers
    (stale-caused when every gate that names it is held back only by stale records)."""
    covered: dict[str, list[str]] = {}
    naming: dict[str, list[str]] = {}
    for row in gate_rows:
        for eq in row["equations"]:
            naming.setdefault(eq, []).append(row["gate"])
            if row.get("accepted"):
                covered.setdefault(eq, []).append(row["gate"])
    equations, problems = [], []
    for eq in cat.equations.values():
        by = sorted(covered.get(eq.id, []))
        equations.append({"id": eq.id, "paper": eq.paper, "tier": eq.data["tier"], "status": eq.data["status"],
                          "covered_by": by})
        if eq.data["status"] in ("implemented", "deviates") and not by:
            gates = naming.get(eq.id, [])
            held = gates and all(stale.of_gate.get(g) for g in gates)
            problems.append(Problem(f"equation {eq.id} ({eq.data['status']}) is covered by no accepted gate",
                                    "equation", tuple(j for g in gates for j in stale.of_gate[g]) if held else ()))
    return equations, problems


def _perturbation_rows(cat, caught: dict, refused: list, stale: stale_evidence.StaleAcceptances
                       ) -> tuple[list[dict], list[Problem]]:
    """Each perturbation with the gates that catch it; a problem per one none catches (stale-caused when a
    stale record of it accepted its gate)."""
    rows, problems = [], []
    for p in cat.perturbations.values():
        by = sorted(caught.get(p.id, []))
        rows.append({"id": p.id, "title": p.data["title"], "caught_by": by,
                     "refused": [{"gate": r.gate, "why": r.why} for r in refused if r.perturbation == p.id]})
        if not by:
            problems.append(Problem(f"perturbation {p.id} ({p.data['title']}) is caught by no gate with current "
                                    f"evidence (a blind spot, or evidence missing/stale)", "perturbation",
                                    tuple(stale.of_perturbation.get(p.id, ()))))
    return rows, problems
