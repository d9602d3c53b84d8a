"""RayExecutor: each unit of a run a Ray task, on the cluster its user already has.

    fidelity perturb --all --executor ray [--ray-address ADDR]
    fidelity discover --module M --executor ray [--ray-address ADDR]

Without an address, Ray's own connection is used when this process has one (ray.init called
before), else a local cluster on this machine's cores is started, and stopped at the end. With an
address (`auto`, `HOST:6379`; not Ray Client's ray://, which cannot stream a task's start back) the
project root is shipped to the workers as the job's working directory (Ray's runtime_env
working_dir, which leaves out what .gitignore names, and SHIP_EXCLUDES besides); so is it when the
caller's own ray.init shipped one. Each task maps the driver's paths to its own (ray_task.py). Every worker needs the driver's Python, torch, pytest and
fidelity: a unit run with other versions is lost, never judged.

Each task declares what it needs: one CPU, and a GPU when one of its gate instances runs on CUDA
(`num_gpus=1`; the gate index then keeps the CUDA instances this machine would skip). A unit that
needs a GPU the cluster does not have is lost at once instead of waiting for ever.

Failures of the engine are outcomes, never crashes of the run: a worker that dies, a lost node, a
task cancelled or past its time (its child's timeout plus TASK_GRACE_S) come back as a ChildRun
with `lost` set (launch.lost_child), which the runner records as red for another reason. Tasks are
never retried by Ray (max_retries=0): the runner decides what runs again (executor.py).
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from fidelity.message_line import first_line
from fidelity.perturb import executor as executor_mod
from fidelity.perturb import launch, ray_task
from fidelity.perturb import warm_start as warm_start_mod
from fidelity.perturb.errors import ExecutorUnavailable

INSTALL_HINT = "pip install 'fidelity[ray]'"
TASK_GRACE_S = warm_start_mod.READY_TIMEOUT_S + 60.0  # a zygote's start, and sending the files back
POLL_S = 0.5  # how often a waiting unit looks whether the user interrupted the run
SHIP_EXCLUDES = [".git", ".venv", "reports", ".fidelity-cache", "__pycache__", "*.egg-info", "build"]


def require_ray():
    """The ray module, or ExecutorUnavailable saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ExecutorUnavailable(f"--executor ray needs Ray, which is not installed here: {INSTALL_HINT}") from None
    return ray


class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None = None, *, root: str | None = None, warm_start: bool = True,
                 init_options: dict | None = None):
        """Connect (or use this process's connection); with an address, ship `root` (the project)."""
        self._ray = ray = require_ray()
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            options = dict(init_options or {})
            if address is not None and root is not None:
                options["runtime_env"] = {"working_dir": str(root), "excludes": SHIP_EXCLUDES}
            try:
                ray.init(address=address, log_to_driver=False, **options)
            except Exception as exc:  # noqa: BLE001 - Ray raises several kinds; each means no cluster
                raise ExecutorUnavailable(f"cannot reach the Ray cluster{f' at {address}' if address else ''}: "
                                          f"{type(exc).__name__}: {_first_line(exc)}") from None
        # tasks run in the job's working directory when one was shipped (by us or by the caller's init)
        self.shipped = bool((ray.get_runtime_context().runtime_env or {}).get("working_dir"))
        self.warm_start = warm_start
        resources = ray.cluster_resources()
        self._cpus, self._gpus = int(resources.get("CPU", 1)), int(resources.get("GPU", 0))
        self._task = ray.remote(ray_task.run_unit)
        self._driver_versions = ray_task.versions()
        self._in_flight: set = set()  # the tasks of the units being run now (cancel_all)
        self._lock = threading.Lock()

    def default_jobs(self) -> int:
        return max(1, self._cpus)

    def gpus(self) -> int:
        return self._gpus

    def index_zygote(self) -> None:
        return None  # the gate index is collected on this machine, cold (and cached)


    def run(self, unit: executor_mod.Unit, place: executor_mod.Place,
            started: Callable[[], None] = executor_mod.not_told) -> launch.ChildRun:
        if launch.stopping():
            raise launch.Stopped("the run was interrupted")
        t0 = time.perf_counter()
        if unit.gpus > self._gpus:
            return launch.lost_child(unit.label, f"it needs {unit.gpus} GPU for its CUDA instances and the cluster "
                                                 f"has {self._gpus}", start="ray")
        sent = ray_task.payload(unit, place, shipped=self.shipped, warm_start=self.warm_start)
        try:
            task = self._task.options(**task_options(unit)).remote(sent)
        except Exception as exc:  # noqa: BLE001 - Ray refused the task: the engine's failure, this unit's outcome
            return launch.lost_child(unit.label, f"Ray did not take the task: {type(exc).__name__}: {_first_line(exc)}",
                                     start="ray")
        with self._lock:
            self._in_flight.add(task)
        try:
            self._next(task, deadline=None)  # {"started": ...}: queued until then, for as long as it takes
            started()
            back = self._next(task, deadline=time.monotonic() + unit.timeout_s + TASK_GRACE_S)
        except _Lost as lost:
            return launch.lost_child(unit.label, str(lost), wall_s=time.perf_counter() - t0, start="ray")
        finally:
            with self._lock:
                self._in_flight.discard(task)
        return ray_task.receive(back, unit, place, self._driver_versions)

    def _next(self, task, deadline: float | None):
        """The task's next yield; _Lost when Ray lost it or it ran past `deadline`; launch.Stopped
        when the user interrupted the run (the task is cancelled)."""
        ray = self._ray
        while True:
            if launch.stopping():
                ray.cancel(task, force=True)
                raise launch.Stopped("the run was interrupted")
            if deadline is not None and time.monotonic() > deadline:
                ray.cancel(task, force=True)
                raise _Lost("the task ran past its child's timeout and TASK_GRACE_S, and was cancelled")
            ready, _ = ray.wait([task], timeout=POLL_S)
            if ready:
                break
        try:
            return ray.get(next(task))
        except StopIteration:
            raise _Lost("the task ended without sending its results") from None
        except ray.exceptions.RayTaskError as exc:  # our task code raised on the worker
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            raise _Lost(f"{type(cause).__name__}: {_first_line(cause)}") from None
        except ray.exceptions.RayError as exc:  # a worker that died, a lost node, a cancelled task
            raise _Lost(f"{type(exc).__name__}: {_first_line(exc)}") from None

    def cancel_all(self) -> None:
        with self._lock:
            tasks = list(self._in_flight)
        for task in tasks:
            self._ray.cancel(task, force=True)

    def close(self) -> None:
        if self._owns_connection and self._ray.is_initialized():
            self._ray.shutdown()


def task_options(unit: executor_mod.Unit) -> dict:
    """What a unit's task asks Ray for: a CPU, a GPU for CUDA instances, no retry by Ray."""
    return {"num_cpus": 1, "num_gpus": unit.gpus, "max_retries": 0, "num_returns": "streaming",
            "name": f"fidelity {unit.label}"}


class _Lost(Exception):
    pass


def _first_line(exc: BaseException) -> str:
    return first_line(str(exc))
