"""Executors: where the runner's children run.

The runner decides what runs (the clean runs, the forced failure, a child per perturbation or a
batch of mutants, the green-after parts) and in which order. An executor runs one such *unit* to
its end and hands back what its child left, a `launch.ChildRun`, which the runner reads the same
way whoever ran it:

  LocalExecutor  on this machine: forked from a warm zygote (warm_start.py), or cold (the default)
  RayExecutor    each unit a Ray task on a cluster (ray_executor.py; `pip install 'fidelity[ray]'`)

An executor that loses a unit (a worker that died, a lost node, a task past its time) says why in
the ChildRun's `lost`: every gate of that unit is then red for another reason, never caught.

The executor in effect is the one `using(...)` set in this context, else a run's own LocalExecutor,
so a caller above the runner (discovery) chooses where children run without passing it through.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Protocol

from fidelity.perturb import launch
from fidelity.perturb import warm_start as warm_start_mod


@dataclass(frozen=True)
class Unit:
    """One child's work: a job for child.py, its time, what it patches and what it needs."""
    label: str                 # names its folder in the run's scratch directory
    job: dict                  # child.py's job
    timeout_s: float
    target: str | None = None  # the module its patch serves (a zygote that holds it cannot serve it)
    gpus: int = 0              # 1 when one of its gate instances runs on CUDA


@dataclass(frozen=True)
class Place:
    """Where a run's children start on the machine that runs the runner."""
    root: Path                 # the project root: the children's working directory
    workdir: str               # the run's scratch directory: job and result files
    pythonpath: tuple[str, ...]
    env: dict                  # a cold child's environment (the run's `environment` applied)


def not_told() -> None:
    """The `started` callback of a caller that does not count units."""


class Executor(Protocol):
    name: str

    def default_jobs(self) -> int:
        """How many units at once when the caller does not say."""

    def gpus(self) -> int:
        """GPUs the units may ask for (CUDA instances are kept only where there are some)."""

    def index_zygote(self) -> warm_start_mod.LazyZygote | None:
        """A zygote on this machine for collecting the gate index, or None (collect cold)."""

    def run(self, unit: Unit, place: Place, started: Callable[[], None] = not_told) -> launch.ChildRun:
        """Run `unit` to its end; call `started` once it is running (not merely queued)."""

    def cancel_all(self) -> None:
        """Stop every unit running or queued now (the run is ending on an exception): each `run`
        call returns soon after, its unit killed or lost."""

    def close(self) -> None:
        """Release what the executor started (its zygote, its cluster connection)."""


class LocalExecutor:
    """Children on this machine: forked from a zygote (warm), or fresh interpreters (cold)."""

    name = "local"

    def __init__(self, zygote: warm_start_mod.LazyZygote | None = None, *, owns_zygote: bool = False):
        self.zygote = zygote
        self._owns_zygote = owns_zygote

    def default_jobs(self) -> int:
        import os

        return max(1, os.cpu_count() or 1)

    def gpus(self) -> int:
        return 0  # CUDA instances run here only when collection here found CUDA: nothing to add

    def index_zygote(self) -> warm_start_mod.LazyZygote | None:
        return self.zygote

    def run(self, unit: Unit, place: Place, started: Callable[[], None] = not_told) -> launch.ChildRun:
        zygote = self.zygote.get() if self.zygote is not None else None
        if zygote is not None and unit.target is not None and zygote.holds(unit.target):
            zygote = None  # the target is imported there already: its patch needs a fresh interpreter
        started()
        return launch.run_child(unit.job, workdir=place.workdir, label=unit.label, cwd=str(place.root),
                                env=place.env, timeout_s=unit.timeout_s, zygote=zygote)

    def cancel_all(self) -> None:
        launch.kill_all()

    def close(self) -> None:
        if self._owns_zygote and self.zygote is not None:
            self.zygote.close()


_IN_EFFECT: contextvars.ContextVar[Executor | None] = contextvars.ContextVar("fidelity_executor", default=None)


@contextlib.contextmanager
def using(executor: Executor | None) -> Iterator[Executor | None]:
    """Runs started in this context (in this thread) run their children on `executor`."""
    token = _IN_EFFECT.set(executor)
    try:
        yield executor
    finally:
        _IN_EFFECT.reset(token)


def in_effect() -> Executor | None:
    """The executor `using` set here, or None (a run then makes its own LocalExecutor)."""
    return _IN_EFFECT.get()
