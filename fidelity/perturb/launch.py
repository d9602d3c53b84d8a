"""Start one runner child, bound its time, and read what it left.

A child is `python -m fidelity.perturb.child JOB.json` in its own process
group (session), with its output in a log file; or, given a warm-start
zygote (warm_start.py), the same `child.main` in a process forked from it. On timeout the whole group is
killed (SIGKILL), so a gate that forked or started threads cannot outlive it.
A child with no final results file died: "crash (exit code N)" (the plugin
writes that file when the pytest session finishes, whatever its exit status;
pytest's own exit status is kept in `returncode`). The plugin's
`.partial` lines still give the tests that finished before the end, and the
one that was running.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from fidelity.child_env import child_environment

OK_EXIT_CODES = (0, 1, 5)  # pytest: all passed, some failed, nothing collected
OUTPUT_TAIL = 4000

_live: set[subprocess.Popen | int] = set()  # cold children, and warm children's pids
_live_lock = threading.Lock()
_stopped = threading.Event()  # stop_all(): no child starts any more in this process


class Stopped(Exception):
    """A child was asked for after stop_all() (the user interrupted the run)."""


@dataclass
class ChildRun:
    label: str
    returncode: int | None
    timed_out: bool
    wall_s: float
    results: dict | None           # the final results file, if written
    items: list[dict] = field(default_factory=list)
    in_flight: str | None = None   # nodeid started and not finished (crash / timeout)
    collect_errors: list[dict] = field(default_factory=list)
    output_tail: str = ""
    start: str = "cold"            # "warm": forked from the zygote; "cold": a fresh interpreter
    lost: str | None = None        # why the executor lost the unit (a worker died, a node was lost)

    @property
    def status(self) -> str:
        """ok | timeout | crash | lost"""
        if self.lost is not None:
            return "lost"
        if self.timed_out:
            return "timeout"
        if self.results is None:
            return "crash"
        return "ok"

    @property
    def status_text(self) -> str:
        s = self.status
        if s == "lost":
            return f"lost by the executor ({self.lost})"
        if s == "timeout":
            return "timeout"
        if s == "crash":
            return f"crash (exit code {self.returncode})"
        return "ok"

    @property
    def patch_served(self) -> int | None:
        """Times the child served the patched module (None: unpatched or unknown)."""
        return (self.results or {}).get("patch_served")

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "start": self.start,
            "patch_served": self.patch_served,
            "status": self.status_text,
            "returncode": self.returncode,
            "wall_s": round(self.wall_s, 3),
            "in_flight": self.in_flight,
            "collect_errors": self.collect_errors,
            "output_tail": self.output_tail if self.status != "ok" else "",
        }


def child_env(repo_root: str, pythonpath: list[str] | tuple[str, ...] = (), processes: int | None = None,
              base: dict | None = None) -> dict:
    """The environment of a child: `base` (default os.environ) with the repo root, the extra paths
    and the directory holding `fidelity` on PYTHONPATH; a fixed hash seed; no
    PYTEST_ADDOPTS / PYTEST_PLUGINS from the caller; and what fidelity/child_env.py gives every
    child: math threads capped to a share of the cores for each of `processes` children running at once."""
    import fidelity

    env = dict(os.environ if base is None else base)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    fidelity_parent = os.path.dirname(os.path.dirname(os.path.abspath(fidelity.__file__)))
    parts = [os.path.abspath(repo_root), *[os.path.abspath(p) for p in pythonpath], fidelity_parent]
    if env.get("PYTHONPATH"):
        parts += env["PYTHONPATH"].split(os.pathsep)
    seen: list[str] = []
    for p in parts:
        if p and p not in seen:
            seen.append(p)
    env["PYTHONPATH"] = os.pathsep.join(seen)
    env["PYTHONHASHSEED"] = "0"
    return child_environment(env, processes)


def apply_overrides(env, overrides: dict[str, str | None] | None) -> None:
    """Change `env` (a dict or os.environ) in place: a str sets the variable, None unsets it."""
    for k, v in (overrides or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v


def with_overrides(env: dict, overrides: dict[str, str | None] | None) -> dict:
    """A copy of `env` with `overrides` applied."""
    env = dict(env)
    apply_overrides(env, overrides)
    return env


def run_child(job: dict, *, workdir: str | os.PathLike, label: str, cwd: str, env: dict, timeout_s: float,
              zygote=None) -> ChildRun:
    """Run one child job to completion or timeout. `job["results"]` is set here. With a
    zygote the child is forked from it (cwd and env are the zygote's, the same values)."""
    if _stopped.is_set():
        raise Stopped("the run was interrupted")
    results = results_path(workdir, label)
    d = results.parent
    d.mkdir(parents=True, exist_ok=True)
    partial = Path(str(results) + ".partial")
    for p in (results, partial):
        if p.exists():
            p.unlink()
    job = dict(job, results=str(results))
    job_path = d / "job.json"
    job_path.write_text(json.dumps(job), encoding="utf-8")
    log_path = d / "output.log"
    t0 = time.perf_counter()
    if zygote is not None:
        returncode, timed_out = _run_warm(zygote, job_path, log_path, timeout_s)
    else:
        returncode, timed_out = _run_cold(job_path, log_path, cwd, env, timeout_s)
    wall = time.perf_counter() - t0
    if _stopped.is_set():  # killed by stop_all (or ended while it ran): what it left is no outcome
        raise Stopped("the run was interrupted")
    tail = log_path.read_bytes()[-OUTPUT_TAIL:].decode("utf-8", "replace")
    return read_child(label, results, returncode=returncode, timed_out=timed_out, wall_s=wall,
                      output_tail=tail, start="warm" if zygote is not None else "cold")


def results_path(workdir: str | os.PathLike, label: str) -> Path:
    """Where the child labelled `label` writes its results, in a run's scratch directory."""
    return Path(workdir) / _safe(label) / "results.json"


def lost_child(label: str, why: str, wall_s: float = 0.0, output_tail: str = "", start: str = "cold") -> ChildRun:
    """A unit its executor lost: nothing it ran is known, every gate of it red for another reason."""
    return ChildRun(label=label, returncode=None, timed_out=False, wall_s=wall_s, results=None,
                    output_tail=output_tail or why, start=start, lost=why)


def stopping() -> bool:
    """True once stop_all() was called (the user interrupted the run), until resume()."""
    return _stopped.is_set()


def read_child(label: str, results: str | os.PathLike, *, returncode: int | None, timed_out: bool, wall_s: float,
               output_tail: str = "", start: str = "cold") -> ChildRun:
    """What a child left in its results file (and the .partial lines when it did not finish)."""
    results = Path(results)
    final = None
    if results.exists():
        try:
            final = json.loads(results.read_text(encoding="utf-8"))
        except ValueError:
            final = None
    items, started = _read_partial(Path(str(results) + ".partial"))
    if final is not None:
        items = final.get("items", [])
    done = {i["nodeid"] for i in items}
    in_flight = next((n for n in reversed(started) if n not in done), None)
    return ChildRun(
        label=label,
        returncode=returncode,
        timed_out=timed_out,
        wall_s=wall_s,
        results=final,
        items=items,
        in_flight=in_flight if (timed_out or final is None) else None,
        collect_errors=(final or {}).get("collect_errors", []),
        output_tail=output_tail,
        start=start,
    )


def _run_cold(job_path: Path, log_path: Path, cwd: str, env: dict, timeout_s: float) -> tuple[int | None, bool]:
    timed_out = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fidelity.perturb.child", str(job_path)],
            cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        _register(proc)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            proc.wait()
        finally:
            with _live_lock:
                _live.discard(proc)
    return proc.returncode, timed_out


def _run_warm(zygote, job_path: Path, log_path: Path, timeout_s: float) -> tuple[int | None, bool]:
    pid = zygote.start(str(job_path), str(log_path))
    _register(pid)
    try:
        code = zygote.wait(pid, timeout_s)
        if code is not None:
            return code, False
        _kill_group(pid)
        return zygote.wait(pid), True
    finally:
        with _live_lock:
            _live.discard(pid)


def _register(proc: subprocess.Popen | int) -> None:
    """Count a started child among the live ones; one started while stop_all ran (after run_child's check,
    before kill_all saw it) is killed here, or the interrupted run would wait for it to finish."""
    with _live_lock:
        _live.add(proc)
    if _stopped.is_set():
        _kill_group(proc)


def stop_all() -> None:
    """Interrupted: start no more children in this process, and kill the running ones
    (until resume(), which the caller makes once its runs have all returned)."""
    _stopped.set()
    kill_all()


def resume() -> None:
    _stopped.clear()


def kill_all() -> None:
    """Kill every child still running (the runner calls this when interrupted)."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen | int) -> None:
    pid = proc if isinstance(proc, int) else proc.pid
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _read_partial(path: Path) -> tuple[list[dict], list[str]]:
    items: list[dict] = []
    started: list[str] = []
    if not path.exists():
        return items, started
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a line cut short by the kill
        if obj.get("event") == "start":
            started.append(obj["nodeid"])
        elif obj.get("event") == "item":
            items.append(obj["item"])
    return items, started


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in label) or "child"
