"""check stage: acceptance. Every gate must have CURRENT evidence of going red by its
own assertion (and green after); every implemented equation must be covered by an
accepted gate; every perturbation must be caught by at least one gate.

Evidence is current only while the hashes of the gate's file, the target's source,
the fixtures it read and the perturbation's edits all match what ran.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fidelity import project
from fidelity.evidence import listed_gates, paths, store, verdict
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
    records, bad = store.scan(here.evidence)
    spec_of = _perturbations(cat)
    return JudgedEvidence(spec_of, verdict.judge(records, here.root, spec_of), bad)


def run(cat, args, say, gate_rows: list[dict] | None = None, evidence: JudgedEvidence | None = None) -> dict:
    """The stage's verdict on the gate suite's `gate_rows`, from `evidence` (default: judged now)."""
    here = project.current()
    evidence = evidence or judge_evidence(cat)
    spec_of, judged, bad = evidence.spec_of, evidence.judged, evidence.bad
    acceptance, caught = _acceptance(judged, spec_of)
    gate_rows = gate_rows or []
    # a record that cannot be read is named, never skipped: another record may accept its gate,
    # but nobody can say what the bad one held
    problems = [f"evidence record {here.relative(f)} is not valid ({why}): {todo}" for f, why, todo in bad]
    for row in gate_rows:
        acc = acceptance.get(row["gate"], {"accepted": False, "by": [], "stale": [], "not_red": []})
        row["accepted"] = acc["accepted"]
        row["accepted_by"] = sorted({e["perturbation"] for e in acc["by"]})
        row["stale_evidence"] = acc["stale"]
        if not acc["accepted"]:
            problems.append(f"gate {row['gate']} is not accepted ({why_not_accepted(acc)}): {what_to_run(acc)}")
    # what the runner refuses though another perturbation accepts the gate: a listed gate not red under
    # its perturbation, a gate name the suite does not have (judged only when the suite was collected)
    known = {row["gate"] for row in gate_rows} if gate_rows else None
    refused = listed_gates.refusals(spec_of, judged, known)
    problems += [r.sentence() for r in refused]
    covered: dict[str, list[str]] = {}
    for row in gate_rows:
        if row.get("accepted"):
            for eq in row["equations"]:
                covered.setdefault(eq, []).append(row["gate"])
    equations = []
    for eq in cat.equations.values():
        by = sorted(covered.get(eq.id, []))
        equations.append({"id": eq.id, "paper": eq.paper, "tier": eq.data["tier"], "status": eq.data["status"],
                          "covered_by": by})
        if eq.data["status"] in ("implemented", "deviates") and not by:
            problems.append(f"equation {eq.id} ({eq.data['status']}) is covered by no accepted gate")
    perturbations = []
    for p in cat.perturbations.values():
        by = sorted(caught.get(p.id, []))
        perturbations.append({"id": p.id, "title": p.data["title"], "caught_by": by,
                              "refused": [{"gate": r.gate, "why": r.why} for r in refused if r.perturbation == p.id]})
        if not by:
            problems.append(f"perturbation {p.id} ({p.data['title']}) is caught by no gate with current evidence "
                            f"(a blind spot, or evidence missing/stale)")
    for msg in problems[:40]:
        say(f"evidence  RED  {msg}")
    if len(problems) > 40:
        say(f"evidence  ... and {len(problems) - 40} more")
    accepted = sum(1 for r in gate_rows if r.get("accepted"))
    say(f"evidence  {'ok ' if not problems else 'RED'}  {accepted}/{len(gate_rows)} gates accepted, "
        f"{sum(1 for p in perturbations if p['caught_by'])}/{len(perturbations)} perturbations caught"
        + (f", {len(refused)} listed gates refused" if refused else ""))
    return {"stage": "evidence", "ok": not problems, "problems": problems,
            "equations": equations, "perturbations": perturbations}
