"""Where a run's children start: its executor, a scratch directory, `jobs` worker threads and the tally
of the units they hand over (executor.py, unit_tally.py)."""
from __future__ import annotations

import concurrent.futures as cf
import tempfile
import threading
from pathlib import Path

from fidelity.perturb import executor as executor_mod
from fidelity.perturb import gate_index, launch
from fidelity.perturb import warm_start as warm_start_mod
from fidelity.perturb.stages.settings import Settings
from fidelity.perturb.unit_tally import UnitTally
from fidelity.targets import patching

LOST_UNPATCHED_RETRIES = 2  # an unpatched unit lost by the executor is run again at most this often


def executor_for(s: Settings, executor, warm_start: bool, zygote) -> tuple["executor_mod.Executor", bool]:
    """The run's executor, and whether the run owns it (and closes it): the caller's, or a
    LocalExecutor forking from the caller's zygote (shared between runs: their environments differ
    only in `environment`, which each child applies itself), from one of our own, or cold."""
    if executor is not None:
        return executor, False
    if not warm_start:
        return executor_mod.LocalExecutor(None), True
    if zygote is not None:
        return executor_mod.LocalExecutor(zygote), True
    return executor_mod.LocalExecutor(warm_start_mod.LazyZygote(str(s.root), s.base_env), owns_zygote=True), True


class Children:
    """Where a run's children start: a scratch directory for their job and result files, `jobs`
    worker threads, each handing one unit at a time to the executor, and the tally of those units.
    As a context: on any exception every child is killed; in any case the workers are joined, an
    executor of the run's own closed and the directory removed."""

    def __init__(self, s: Settings, executor: "executor_mod.Executor", owns_executor: bool):
        self.s = s
        self.executor, self.owns_executor = executor, owns_executor
        self.workdir = tempfile.mkdtemp(prefix="fidelity-perturb-")
        self.place = executor_mod.Place(root=s.root, workdir=self.workdir, pythonpath=tuple(s.pythonpath), env=s.env)
        self.pool = cf.ThreadPoolExecutor(max_workers=s.jobs, thread_name_prefix="fidelity-perturb")
        self.tally = UnitTally(lambda e: s.emit(**e), executor.name)
        self.index: gate_index.GateIndex | None = None  # once collected: which units need a GPU
        self.ending = False  # the run is ending on an exception: a unit lost now is not run again

    def __enter__(self) -> "Children":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is not None:
                self.ending = True
                self.executor.cancel_all()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)
            if self.owns_executor:
                self.executor.close()
            _rmtree(self.workdir)
        return False

    def job(self, args, patch: patching.Patch | None = None, rootdir: Path | None = None, keep=None,
            hear_calls: bool = False) -> dict:
        """What a child does (child.py): run the node ids or paths `args`, only the instances in
        `keep` (None: all), with `patch`'s source served for its module; `hear_calls`: each result says
        which functions of its targets the child had called (a clean run kept by function)."""
        j = {"mode": "run", "args": list(args), "rootdir": str(rootdir or self.s.root),
             "fixtures_dir": str(self.s.fixtures), "patch": None,
             "keep": sorted(keep) if keep is not None else None, "env": dict(self.s.environment or {}),
             # a perturbation needs each gate red once: the rest of a red gate's instances are skipped
             "stop_gate_when_red": patch is not None,
             # an observation for discovery needs one gate red: everything after it is skipped
             "stop_when_any_red": patch is not None and self.s.first_red_only,
             "hear_calls": hear_calls}
        if patch is not None:
            j["patch"] = {"perturbation": patch.perturbation_id, "module": patch.module,
                          "path": patch.path, "source": patch.patched}
        return j

    def start(self, label: str, job: dict, timeout: float, target: str | None = None,
              queued: bool = False) -> launch.ChildRun:
        """Run one child to its end on the executor (in a worker thread); `queued`: the tally
        counted it when it was submitted."""
        if not queued:
            self.tally.queue()
        unit = executor_mod.Unit(label=label, job=job, timeout_s=timeout, target=target, gpus=self._gpus(job))
        started = threading.Event()

        def on_start() -> None:
            if not started.is_set():
                started.set()
                self.tally.start()

        try:
            child = self.executor.run(unit, self.place, on_start)
            for attempt in range(1, LOST_UNPATCHED_RETRIES + 1):
                if (child.lost is None or job.get("patch") is not None or job.get("mode") == "mutants"
                        or self.ending or launch.stopping()):
                    break
                self.s.emit("lost", f"{label}: {child.status_text}; unpatched, so it says nothing about a "
                                    f"gate: run again ({attempt} of {LOST_UNPATCHED_RETRIES})")
                child = self.executor.run(unit, self.place, on_start)
            return child
        finally:
            self.tally.finish(started=started.is_set())

    def submit(self, label: str, job: dict, timeout: float, target: str | None = None) -> cf.Future:
        self.tally.queue()
        return self.pool.submit(self.start, label, job, timeout, target, True)

    def _gpus(self, job: dict) -> int:
        keep = job.get("keep")
        return 1 if self.index is not None and keep and self.index.on_cuda(keep) else 0


def _rmtree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
