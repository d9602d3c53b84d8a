"""Step 3, what current records already say: with stale_only, a perturbation whose evidence is current is
not run again (its records judged by today's spec as `fidelity check` judges them); with reuse_covering,
a covering gate whose record is current is not run again either (its outcome is that record's)."""
from __future__ import annotations

from pathlib import Path

from fidelity.evidence import jsonio, listed_gates, read_memo, record, staleness, store
from fidelity.evidence.outcome import Outcome
from fidelity.evidence.verdict import Judged
from fidelity.perturb.result import GateResult, PerturbationResult
from fidelity.perturb.stages.items import gate_of
from fidelity.perturb.stages.selection import shown_by, start_results
from fidelity.perturb.stages.state import Run


def keep_current_evidence(r: Run) -> None:
    """Sets r.selection.todo: every perturbation, or with stale_only those whose evidence is not current
    (the others are filled from their records); then, with reuse_covering, r.selection.kept_covering."""
    if not r.s.stale_only and not r.s.reuse_covering:
        r.selection.todo = list(r.perts)
        return
    by_perturbation, now = _records_by_perturbation(r), staleness.ProjectNow(r.s.root)
    r.selection.todo = [p for p in r.perts
                        if not (r.s.stale_only
                                and _kept(r, p, by_perturbation.get(p["id"], {}), r.selection.gates_of[p["id"]], now))]
    if r.s.reuse_covering:
        _keep_current_covering(r, by_perturbation, now)


def without_an_index(r: Run) -> bool:
    """stale_only, when every perturbation names a subject (it runs only the gates it names, so the gate
    index adds nothing to which records it needs) and each of those gates has a current record: every
    perturbation is filled from its records and nothing runs, not even the collect-only child that
    imports the subject's package. A named gate without a current record (new, renamed, misspelled)
    sends the run down the usual path, where the index judges it."""
    if not r.s.stale_only or not r.perts or not all(p.get("subject") for p in r.perts):
        return False
    by_perturbation, now = _records_by_perturbation(r), staleness.ProjectNow(r.s.root)
    named = {p["id"]: sorted(shown_by(p)) for p in r.perts}
    if not all(_all_current(by_perturbation.get(p["id"], {}), named[p["id"]], r.s.root, p, now)
               and _judged_by_todays_spec(p, by_perturbation[p["id"]], r.s.root, now) is not None for p in r.perts):
        return False
    r.selection.gates_of.update(named)
    start_results(r)
    for p in r.perts:
        _kept(r, p, by_perturbation[p["id"]], named[p["id"]], now)
    r.result.baseline = {"skipped": "nothing to run"}
    return True


def _records_by_perturbation(r: Run) -> dict[str, dict]:
    """perturbation id -> gate -> its record, for the run's perturbations (read once a run)."""
    if r.selection.records is None:
        r.selection.records = {}
        for rec in store.load_all(r.s.records_root, [p["id"] for p in r.perts], read_memo.folder(r.s.cache)):
            r.selection.records.setdefault(rec.perturbation, {})[rec.gate] = rec
    return r.selection.records


def _all_current(mine: dict, gates: list[str], root: Path, p: dict, now: staleness.ProjectNow) -> bool:
    """Every one of `gates` has a current record among `mine` (and there is at least one)."""
    return bool(gates) and all(g in mine and staleness.is_current(mine[g], root, p, now) for g in gates)


def _kept(r: Run, p: dict, mine: dict, gates: list[str], now: staleness.ProjectNow) -> bool:
    """stale_only: fills p's result from its records and says so (True) when every one of `gates` has a
    current record and today's spec needs no new run to judge them; the kept records are then judged by
    today's spec as check judges them (listed_gates), so a listed gate they refuse makes p RED."""
    if not _all_current(mine, gates, r.s.root, p, now):
        return False
    refused = _judged_by_todays_spec(p, mine, r.s.root, now)
    if refused is None:
        return False
    _from_records(r.results[p["id"]], [mine[g] for g in gates], refused)
    r.s.emit("skip", f"{p['id']} ... evidence current, not re-run"
             + (f"; RED by today's spec: {'; '.join(x.sentence() for x in refused)}" if refused else ""), id=p["id"])
    return True


def _judged_by_todays_spec(p: dict, mine: dict, root: Path, now: staleness.ProjectNow) -> list | None:
    """What check refuses of p's records (listed_gates.refusals_of: one rule for both); None when one of
    them needs p run again (no current record for a listed gate, or one that ran before the spec listed it)."""
    judged = {g: Judged(rec, tuple(staleness.staleness(rec, root, p, now))) for g, rec in mine.items()}
    refused = listed_gates.refusals_of(p["id"], p["gates"], p["predicted"], judged, None)
    return None if any(not x.evidence_current for x in refused) else refused


def _keep_current_covering(r: Run, by_perturbation: dict[str, dict], now: staleness.ProjectNow) -> None:
    """Sets r.selection.kept_covering, and takes those gates out of what each perturbation runs. A gate the
    perturbation runs only because it covers the target (neither listed nor predicted) is not run
    again while its record is current (the same rule --stale and `check` apply: the gate file, its
    helpers, the target's source, the fixtures it read and the edits hash as recorded), says it was
    green again, has its clean runs, and saw a verdict, not a crash or a timeout that may belong to
    the machine. The listed and predicted gates always run: they are what the perturbation shows."""
    kept_total = ran_total = 0
    for p in r.selection.todo:
        named = shown_by(p)
        if not named:
            continue  # nothing would run: an unlisted perturbation keeps all its gates
        mine = by_perturbation.get(p["id"], {})
        known = sorted(g for g in r.selection.gates_of[p["id"]] if g not in named and g in mine
                       and _reusable_covering(mine[g], r.s.root, p, now))
        if not known:
            ran_total += len(r.selection.gates_of[p["id"]])
            continue
        r.selection.kept_covering[p["id"]] = [result_from_record(mine[g], kept=True) for g in known]
        r.selection.gates_of[p["id"]] = [g for g in r.selection.gates_of[p["id"]] if g not in known]
        r.selection.instances_of[p["id"]] = {n for n in r.selection.instances_of[p["id"]] if gate_of(n) not in known}
        r.results[p["id"]].gates = r.selection.gates_of[p["id"]]
        kept_total += len(known)
        ran_total += len(r.selection.gates_of[p["id"]])
    if kept_total:
        r.s.emit("skip", f"covering gates: {kept_total} known from current records (inputs unchanged), not run "
                         f"again; {ran_total} gates run (--rerun-covering runs them all)")


def _reusable_covering(rec, root: Path, p: dict, now: staleness.ProjectNow) -> bool:
    return (not rec.listed and rec.predicted is None and rec.green_after is True
            and (rec.clean_runs or 0) >= record.CLEAN_RUNS
            and rec.outcome in (Outcome.RED_BY_ASSERTION, Outcome.SURVIVED, Outcome.SKIPPED)
            and staleness.is_current(rec, root, p, now))


def _from_records(pr: PerturbationResult, records: list, refused: list) -> None:
    """Fill a PerturbationResult from current evidence (stale_only: not re-run), judged by today's spec:
    a gate is listed as the spec lists it now, and what check refuses of them (`refused`) are its misses."""
    pr.status = "current"
    pr.outcomes = [result_from_record(rec) for rec in records]
    for o in pr.outcomes:
        o.listed = o.gate in pr.listed
    outcome_of = {rec.gate: rec.outcome for rec in records}
    pr.refused = [{"gate": x.gate, "outcome": Outcome(outcome_of[x.gate]).value, "detail": x.sentence()}
                  for x in refused]
    pr.restored = all(o.green_after is True for o in pr.outcomes) if pr.outcomes else None


def result_from_record(rec, kept: bool = False) -> GateResult:
    """A gate's outcome as its record holds it."""
    pred = rec.predicted
    if pred is not None:
        pred = dict(pred, reading=jsonio.decode_float(pred.get("reading")))
    return GateResult(
        gate=rec.gate, outcome=rec.outcome, reading=jsonio.decode_float(rec.reading), predicted=pred,
        listed=rec.listed, detail=rec.detail, green_after=rec.green_after, gate_file=rec.gate_file,
        equations=list(rec.equations), instances=list(rec.instances), fixtures_read=rec.fixtures, kept=kept,
    )
