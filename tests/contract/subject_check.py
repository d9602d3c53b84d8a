"""`fidelity check --subject ADAPTER:OBJECT --json` as a user runs it: a child process from the repository,
with tests/contract (the adapters and their packages) on PYTHONPATH.

`gate_files`: a test whose every assertion reads the results of a few gate files runs only those (by their
path inside tests/gates; fidelity.gaterun.subject_gate_files.ONLY_ENV), since a subject's whole suite costs
more than its reading. A test that asserts something of the whole run (nothing else is a finding, every
instance is listed) runs it whole."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fidelity.gaterun.subject_gate_files import ONLY_ENV

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def check_subject(ref: str, *options: str, gate_files: tuple[str, ...] = ()) -> dict:
    """The --json report of `fidelity check --subject ref [options]` (exit 0 asserted: findings do not fail it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    env.pop(ONLY_ENV, None)
    if gate_files:
        env[ONLY_ENV] = os.pathsep.join(gate_files)
    proc = subprocess.run([sys.executable, "-m", "fidelity", "check", "--subject", ref, "--json", *options,
                           "--jobs", "1"],  # checks side by side: a process each is enough
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{ref}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    report = json.loads(proc.stdout)
    if gate_files:  # the run held only these files' gates (a name that is none is refused by the check)
        ran = {g["gate"].split("::")[0] for g in report["gates"]}
        assert ran <= {f"tests/gates/{f}" for f in gate_files}, (ref, sorted(ran))
    return report


def reports_of(adapter: str, objects: tuple[str, ...], gate_files: dict[str, tuple[str, ...]] | None = None
               ) -> dict[str, dict]:
    """object -> its --json report; the checks run side by side (each is one child pytest). `gate_files`:
    object -> the gate files its run is restricted to (an object not named runs its whole suite)."""
    files = gate_files or {}
    with ThreadPoolExecutor(len(objects)) as pool:
        reports = pool.map(lambda o: check_subject(f"{adapter}:{o}", gate_files=files.get(o, ())), objects)
        return dict(zip(objects, reports))


def conformance_of(adapter: str, objects: tuple[str, ...], gate_files: dict[str, tuple[str, ...]] | None = None
                   ) -> dict[str, dict]:
    """object -> the conformance part of its report."""
    return {o: report["conformance"] for o, report in reports_of(adapter, objects, gate_files).items()}
