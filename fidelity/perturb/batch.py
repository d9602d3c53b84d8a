"""A batch child: collect the gates once, then run each of many mutants in a process forked after.

An ordinary perturbation child installs the import hook and then runs pytest from the start:
collection alone (importing the gate files, parametrising over the subjects) costs more than
running the instances that tell a mutant apart, and discovery has hundreds of mutants of one
module over the same gates. A batch child (job mode "mutants") collects the union of their
instances once, unpatched, and then, for each mutant:

  fork; in the fork: serve the mutant (code_swap.swap_in on the module collection imported,
  or the import hook when collection did not import it), run the mutant's instances in
  node-id order through pytest's own runtest protocol, write the recorder's results to the
  mutant's results file (with patch_served and "served_by"), and exit;

while the batch child waits for it under the mutant's timeout (SIGKILL past it). What the
fork writes is what an ordinary child writes, so the runner reads it the same way. A mutant
code_swap cannot serve exactly (SwapImpossible) writes {"swap_impossible": why} and nothing
else: the runner then runs it in an ordinary child. Each fork starts from the collected
state and nothing it does comes back, so one mutant cannot leak into the next.

Job keys beyond child.py's: mutants = [{"id", "module", "path", "source", "keep", "results",
"timeout_s"}], and instance_seconds {node id: unpatched seconds} (the order of a discovery
fork's instances); the fork's exit and timing go to `<results>.status.json`.
"""
from __future__ import annotations

import gc
import json
import os
import signal
import sys
import time

import pytest

from fidelity.evidence import jsonio
from fidelity.perturb import seeding
from fidelity.perturb.child_args import pytest_args
from fidelity.perturb.fork_exit import run_then_exit
from fidelity.perturb.recorder import ANOTHER_RED

SWAP_IMPOSSIBLE = "swap_impossible"


class BatchLoop:
    """The pytest plugin of a batch child: replaces the run loop with one fork per mutant."""

    def __init__(self, job: dict):
        self.job = job

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        recorder = session.config.pluginmanager.get_plugin("fidelity-perturb-recorder")
        if session.testsfailed or recorder is None:
            return True  # collection went wrong unpatched: no mutant is run here (the runner falls back)
        items = {item.nodeid: item for item in session.items}
        gc.collect()
        gc.freeze()  # the collected state stays shared between the forks, out of their collections
        kills: dict[str, int] = {}  # gate -> mutants of this batch it was first to kill
        stop_at_first_red = bool(self.job.get("stop_when_any_red"))
        seconds = self.job.get("instance_seconds") or {}
        for mutant in self.job["mutants"]:
            _run_forked(mutant, items, recorder, kills if stop_at_first_red else None, seconds)
            if stop_at_first_red:
                killer = _first_killer(mutant["results"])
                if killer is not None:
                    kills[killer] = kills.get(killer, 0) + 1
        return True


def _first_killer(results: str) -> str | None:
    try:
        with open(results, encoding="utf-8") as f:
            items = json.load(f).get("items", [])
    except (OSError, ValueError):
        return None
    return next((it["gate"] for it in items if it["outcome"] == "failed" and it["kind"] == "assertion"), None)


def _run_forked(mutant: dict, items: dict, recorder, kills: dict | None, seconds: dict) -> None:
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        run_then_exit(lambda: _serve_and_run(mutant, items, recorder, kills, seconds))
    timed_out = False
    deadline = time.monotonic() + float(mutant["timeout_s"])
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.002)
    returncode = os.waitstatus_to_exitcode(status)
    jsonio.write_json(mutant["results"] + ".status.json",
                      {"returncode": returncode, "timed_out": timed_out, "wall_s": time.perf_counter() - t0})


def _serve_and_run(mutant: dict, items: dict, recorder, kills: dict | None, seconds: dict) -> None:
    from fidelity.perturb import code_swap, import_hook

    module = sys.modules.get(mutant["module"])
    finder = None
    if module is None:  # collection did not import it: the import hook serves it, as in any child
        finder = import_hook.install(mutant["module"], mutant["path"], mutant["source"])
        served_by = "import_hook"
    else:
        try:
            code_swap.swap_in(module, mutant["path"], mutant["source"])
        except code_swap.SwapImpossible as exc:
            jsonio.write_json(mutant["results"], {SWAP_IMPOSSIBLE: str(exc)})
            return
        served_by = "code_swap"
    recorder.start_over(mutant["results"])
    seeding.seed_global_generators()  # as a patched child of its own is seeded (seeding.py)
    chosen = [items[n] for n in sorted(mutant["keep"]) if n in items]
    if kills is not None:
        # one killing gate is all a discovery child needs: the gates that killed this batch's
        # earlier mutants go first, and among equals the quickest instances (their unpatched
        # seconds), so a mutant the 40th instance kills has not paid for the 39 slowest first
        # (which gate is named may change; whether one kills does not)
        chosen.sort(key=lambda it: (-kills.get(it.nodeid.split("[", 1)[0], 0), seconds.get(it.nodeid, 0.0)))
    for i, item in enumerate(chosen):
        if kills is not None and recorder.red_gates:
            for rest in chosen[i:]:
                recorder.skip_unrun(rest, ANOTHER_RED)
            break
        nextitem = chosen[i + 1] if i + 1 < len(chosen) else None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
    failed = any(it["outcome"] in ("failed", "error") for it in recorder.items)
    recorder.write_results(1 if failed else 0, served_by=served_by,
                           patch_served=finder.served if finder is not None else 1)


def main(job: dict) -> int:
    """Run a batch job (child.py hands over mode "mutants" here)."""
    keep_file = job["results"] + ".keep.json"
    jsonio.write_json(keep_file, sorted(job["keep"]))
    args = pytest_args(dict(job, mode="run", patch=None), keep_file)
    for path in sorted({m["path"] for m in job["mutants"]}):
        args += ["--fidelity-subject-file", path]  # an assert raised in the mutated file is not the gate's
    return int(pytest.main(args, plugins=[BatchLoop(job)]))


def read_status(results: str) -> dict | None:
    try:
        with open(results + ".status.json", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
