"""`fidelity check --subject ADAPTER:OBJECT --json` as a user runs it: a child process from the repository,
with tests/contract (the adapters and their packages) on PYTHONPATH."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def check_subject(ref: str, *options: str) -> dict:
    """The --json report of `fidelity check --subject ref [options]` (exit 0 asserted: findings do not fail it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    proc = subprocess.run([sys.executable, "-m", "fidelity", "check", "--subject", ref, "--json", *options,
                           "--jobs", "1"],  # checks side by side: a process each is enough
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{ref}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


def reports_of(adapter: str, objects: tuple[str, ...]) -> dict[str, dict]:
    """object -> its --json report; the checks run side by side (each is one child pytest)."""
    with ThreadPoolExecutor(len(objects)) as pool:
        return dict(zip(objects, pool.map(check_subject, [f"{adapter}:{o}" for o in objects])))


def conformance_of(adapter: str, objects: tuple[str, ...]) -> dict[str, dict]:
    """object -> the conformance part of its report."""
    return {o: report["conformance"] for o, report in reports_of(adapter, objects).items()}
