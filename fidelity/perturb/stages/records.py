"""Step 8, what is kept and written: one evidence record per gate x perturbation (fidelity.evidence), in one
file per perturbation, written as soon as nothing is left to learn about a perturbation or at the end of
the run; none for an observation, and none left of gates a perturbation no longer runs."""
from __future__ import annotations

from pathlib import Path

from fidelity.evidence import jsonio, paths, record, store
from fidelity.perturb.result import GateResult, PerturbationResult
from fidelity.perturb.stages.state import Run
from fidelity.source_meaning import meaning_sha256, memo_of


def write_when_known(r: Run, p: dict) -> None:
    """Step 8 for one perturbation as soon as its child ends, when nothing is left to learn: every
    instance it ran has CLEAN_RUNS kept (its green after is known, green_by_kept_runs) and no file
    it names has changed since the baseline (the check of step 7, for its files). A run stopped
    later keeps these records; the others are written at the end, as before."""
    pr = r.results[p["id"]]
    if r.s.observe or not pr.outcomes or not r.selection.instances_of[p["id"]] <= r.clean.known_green:
        return
    _add_baseline_fixtures_of(r, p)
    files = {str(paths.resolve(f, r.s.root)) for o in pr.outcomes for f in o.fixtures_read} | set(r.watch.files)
    if any(r.watch.hashes_before.get(f) != jsonio.sha256_file(f) for f in files):
        return  # step 7 stops the run and says which
    for o in pr.outcomes:
        o.green_after = True
    pr.restored = True
    _write_records(r, p, record.versions(), record.utc_now())
    r.written.add(p["id"])


def write_evidence(r: Run) -> None:
    if r.s.observe:  # an observation expected nothing, so it proves nothing: no evidence (module docstring)
        r.s.emit("evidence", "observation: no evidence written")
    else:
        _write_all(r)


def _write_all(r: Run) -> None:
    """One record per gate run, and no records left of gates a perturbation no longer runs."""
    vers = record.versions()
    now = record.utc_now()
    r.clean.kept.save()
    for p in r.selection.todo:
        if p["id"] not in r.written:
            _write_records(r, p, vers, now)
    kept = sum(len(k) for k in r.selection.kept_covering.values())
    r.s.emit("evidence", f"evidence: {r.records_written} records in {len(r.result.evidence)} files under "
                         f"{paths.rel_to_root(r.s.records_root, r.s.root)}"
                         + (f"; {kept} current records of covering gates left as they were" if kept else ""))


def _write_records(r: Run, p: dict, vers: dict, now: str) -> None:
    """The records of one perturbation, in its one file: those of the gates it ran written, the current
    ones of gates it kept (o.kept) left as they are, and none left of gates it no longer runs."""
    root, records_root = r.s.root, r.s.records_root
    pr = r.results[p["id"]]
    patch = r.patches[p["id"]]
    fresh, kept = [], set()
    for o in pr.outcomes:
        if o.kept:  # its current record stays as it is
            kept.add(o.gate)
            continue
        # counted up to CLEAN_RUNS: a record that says "enough" does not change with every run
        runs = min(r.result.baseline["clean_runs_of"].get(o.gate, 0), record.CLEAN_RUNS)
        fresh.append(_record(p, pr, patch, o, root, r.watch.keys_before, vers, now, runs,
                             r.watch.helpers.of(o.gate_file)))
    path = store.write_records(records_root, p["id"], fresh, keep=kept)
    if fresh:
        r.result.evidence.append(paths.rel_to_root(path, root))
    r.records_written += len(fresh)


def _record(p, pr: PerturbationResult, patch, o: GateResult, root: Path, keys_before, vers, now,
            runs: int, helpers: dict[str, Path]) -> dict:
    def key(path: str | Path) -> str | None:  # what the file meant when the run began (source_meaning)
        full = str(paths.resolve(str(path), root))
        return keys_before.get(full) or meaning_sha256(full, memo_of(root))

    pred = None
    if o.predicted is not None:
        pred = {"reading": jsonio.encode_float(o.predicted["reading"]), "note": o.predicted.get("note", "")}
    return {
        "schema": record.SCHEMA,
        "perturbation": p["id"],
        "title": p["title"],
        "spec_file": p["file"],
        "target": p["target"],
        "target_file": pr.target_file,
        "edits": p["edits"],
        "edits_sha256": record.edits_sha256(p["target"], p["edits"]),
        "diff": patch.diff,
        "gate": o.gate,
        "gate_file": o.gate_file,
        "equations": o.equations,
        "listed": o.listed,
        "outcome": o.outcome,
        "detail": o.detail,
        "reading": jsonio.encode_float(o.reading),
        "predicted": pred,
        "instances": o.instances,
        "green_after": o.green_after,
        "clean_runs": runs,  # unpatched runs of its instances, all green with identical readings (clean_runs.py)
        "patch_served": (pr.child or {}).get("patch_served"),
        "hashes": {
            "gate_file": key(o.gate_file),
            "target_source": patch.original_key,
            "perturbed_source": patch.patched_key,
            "fixtures": {fx: key(fx) for fx in o.fixtures_read},
            "helpers": {name: key(path) for name, path in helpers.items()},
        },
        "versions": vers,
        "recorded_at": now,
    }


def add_baseline_fixtures(r: Run) -> None:
    """Fixtures read in the baseline belong to the gate too."""
    for p in r.selection.todo:
        _add_baseline_fixtures_of(r, p)


def _add_baseline_fixtures_of(r: Run, p: dict) -> None:
    for o in r.results[p["id"]].outcomes:
        o.fixtures_read = sorted(set(o.fixtures_read) | r.clean.fixtures.get(o.gate, set()))
