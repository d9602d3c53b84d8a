"""`fidelity check --subject ADAPTER:OBJECT --json` as a user runs it: a child process from the repository,
with tests/contract (the adapters and their packages) on PYTHONPATH.

`gate_files`: a test whose every assertion reads the results of a few gate files runs only those (by their
path inside tests/gates; fidelity.gaterun.subject_gate_files.ONLY_ENV), since a subject's whole suite costs
more than its reading. A test that asserts something of the whole run (nothing else is a finding, every
instance is listed) runs it whole."""
from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import warm_cli

from fidelity.gaterun.subject_gate_files import ONLY_ENV

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def check_subject(ref: str, *options: str, gate_files: tuple[str, ...] = ()) -> dict:
    """The --json report of `fidelity check --subject ref [options]` (exit 0 asserted: findings do not fail it)."""
    return check_subjects((ref,), *options, gate_files=gate_files)[ref]


def check_subjects(refs: tuple[str, ...], *options: str, gate_files: tuple[str, ...] = ()) -> dict[str, dict]:
    """ref -> its --json report, from ONE `fidelity check --subject ref1 --subject ref2 ... [options]`: each
    subject is judged on its own instances of one gate run, and its report is the run's with its own entry of
    `subjects` as `conformance` and `gates` (and `ok`), as a run of it alone has them. Exit 0 asserted (findings
    do not fail it), or with --strict the exit the subjects' verdicts call for (1 when any is not ok)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    env.pop(ONLY_ENV, None)
    if gate_files:
        env[ONLY_ENV] = os.pathsep.join(gate_files)
    subjects = [word for ref in refs for word in ("--subject", ref)]
    proc = warm_cli.fidelity(["check", *subjects, "--json", *options,
                              "--jobs", "1"],  # checks side by side: a process each is enough
                             cwd=REPO, env=env, timeout=600)
    assert proc.returncode in ((0, 1) if "--strict" in options else (0,)), \
        f"{refs}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    report = json.loads(proc.stdout)
    each = report.pop("subjects", None)
    reports = {refs[0]: report} if each is None else {
        ref: {**report, **entry, "ok": entry["conformance"]["ok"]} for ref, entry in zip(refs, each, strict=True)}
    assert report["ok"] is all(one["ok"] for one in reports.values()) is (proc.returncode == 0), (refs, proc.returncode)
    for ref, one in reports.items():
        assert one["conformance"]["reference"] == ref, (ref, one["conformance"]["reference"])
        if gate_files:  # the run held only these files' gates (a name that is none is refused by the check)
            ran = {g["gate"].split("::")[0] for g in one["gates"]}
            assert ran <= {f"tests/gates/{f}" for f in gate_files}, (ref, sorted(ran))
    return reports


def reports_of(adapter: str, objects: tuple[str, ...], gate_files: dict[str, tuple[str, ...]] | None = None,
               *, apart: bool = False) -> dict[str, dict]:
    """object -> its --json report. The objects restricted to the same gate files (`gate_files`: object -> the
    gate files its run is restricted to; an object not named runs its whole suite) share one check run, several
    `--subject`s (each child's fixed cost, an interpreter with torch and a collection, about 6 s of CPU, is
    paid once); the runs of different restrictions go side by side. `apart`: a run per object, side by side
    (where the gate work of each is large, one run would put it end to end in one process)."""
    files = gate_files or {}
    groups: dict[tuple, list[str]] = {}  # (the gate files, the object where it runs apart) -> the objects of one run
    for o in objects:
        groups.setdefault((tuple(files.get(o, ())), o if apart else None), []).append(o)
    with ThreadPoolExecutor(len(groups)) as pool:
        runs = pool.map(lambda group: check_subjects(tuple(f"{adapter}:{o}" for o in group[1]), gate_files=group[0][0]),
                        groups.items())
        by_ref = {ref: report for run in runs for ref, report in run.items()}
    return {o: by_ref[f"{adapter}:{o}"] for o in objects}


def conformance_of(adapter: str, objects: tuple[str, ...], gate_files: dict[str, tuple[str, ...]] | None = None
                   ) -> dict[str, dict]:
    """object -> the conformance part of its report."""
    return {o: report["conformance"] for o, report in reports_of(adapter, objects, gate_files).items()}
