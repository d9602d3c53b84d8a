"""Warm starts: runner children forked from a process that has already imported the heavy libraries.

A cold child (`python -m fidelity.perturb.child JOB.json`) spends ~3 s of this machine's time
importing torch, numpy and pytest before its first gate; a run starts one child per
perturbation plus the baseline, forced failure and green-after. A zygote imports those
libraries once and forks one child per job. The fork is still a fresh process: it installs the
patch's import hook before pytest imports anything of ours, exactly as a cold child does.

The zygote never imports a perturbation target: it imports only PRELOAD (third-party
libraries, never `fidelity` beyond this module; only those the project's code names, preload.py)
and reports every module it holds, and the runner starts a perturbation whose target it holds
cold (`Zygote.holds`). A target imported before its hook could not be patched;
`import_hook.install` refuses that too.

Protocol (JSON lines): the zygote prints {"ready": [modules]} once; then for each request
{"job": JOB.json, "log": LOG} on its stdin it prints {"started": pid}, and {"exited": pid,
"returncode": n} when that child ends (a child killed by signal S reads -S, as in
subprocess). Each child runs in its own session, so the runner kills its whole process group
on timeout. When its stdin closes (the runner ended or died) the zygote kills what it started
and exits.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

# hypothesis: its pytest plugin. Not triton (0.24 s a child that calls a kernel): with it imported before the fork,
# every interpreted kernel call in the child raised "Cannot call @triton.jit'd outside of the scope of a kernel"
PRELOAD = ("torch", "numpy", "pytest", "sympy", "mpmath", "yaml", "hypothesis")
READY_TIMEOUT_S = 120


class WarmStartUnavailable(Exception):
    """The zygote could not start; the runner starts its children cold."""


class Zygote:
    """The runner's end: start the zygote, run jobs in forked children, stop it."""

    def __init__(self, *, cwd: str, env: dict, preload: tuple[str, ...] | None = None, wait: bool = True):
        """Start it; with `wait`, return once it is ready (else the caller calls `wait_ready` before using it)."""
        if preload is None:
            from fidelity.perturb.preload import preload_for, with_pytest_plugins  # here: the zygote never imports it

            preload = with_pytest_plugins(preload_for(cwd, PRELOAD))
        if not hasattr(os, "fork"):
            raise WarmStartUnavailable("this platform has no fork()")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "fidelity.perturb.warm_start", *preload],
            cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1, start_new_session=True,
        )
        self._lock = threading.Lock()
        self._one_start = threading.Lock()  # replies come in request order: one request in flight
        self._started: list[int] = []
        self._started_ready = threading.Condition(self._lock)
        self._exits: dict[int, int] = {}
        self._exit_ready = threading.Condition(self._lock)
        self._alive = True
        self._ready = threading.Event()
        self.modules: frozenset[str] = frozenset()
        self._reader = threading.Thread(target=self._read, name="fidelity-zygote-reader", daemon=True)
        self._reader.start()
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Return once it has imported its preload; WarmStartUnavailable (and closed) when it never says so."""
        if not self._ready.wait(READY_TIMEOUT_S) or not self._alive:
            self.close()
            raise WarmStartUnavailable("the zygote did not report ready")

    def holds(self, module: str) -> bool:
        """True when `module` (or a module inside it) is already imported in the zygote."""
        return any(m == module or m.startswith(module + ".") for m in self.modules)

    def start(self, job_path: str, log_path: str) -> int:
        """Fork a child running `job_path`, its output to `log_path`; return its pid."""
        with self._one_start, self._lock:
            if not self._alive:
                raise WarmStartUnavailable("the zygote has exited")
            self._proc.stdin.write(json.dumps({"job": job_path, "log": log_path}) + "\n")
            self._proc.stdin.flush()
            while not self._started and self._alive:
                self._started_ready.wait()
            if not self._started:
                raise WarmStartUnavailable("the zygote exited before starting the child")
            return self._started.pop(0)

    def wait(self, pid: int, timeout_s: float | None = None) -> int | None:
        """The child's return code, or None when it is still running after timeout_s."""
        with self._lock:
            self._exit_ready.wait_for(lambda: pid in self._exits or not self._alive, timeout=timeout_s)
            if pid in self._exits:
                return self._exits.pop(pid)
            if not self._alive:
                raise WarmStartUnavailable("the zygote exited while a child was running")
            return None

    def close(self) -> None:
        if not self._ready.is_set():  # still importing (started early, then not needed): it would read no EOF yet
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended by itself
                pass
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()

    def _read(self) -> None:
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                if "ready" in msg:
                    self.modules = frozenset(msg["ready"])
                    self._ready.set()
                elif "started" in msg:
                    self._started.append(int(msg["started"]))
                    self._started_ready.notify_all()
                elif "exited" in msg:
                    self._exits[int(msg["exited"])] = int(msg["returncode"])
                    self._exit_ready.notify_all()
        with self._lock:
            self._alive = False
            self._started_ready.notify_all()
            self._exit_ready.notify_all()
        self._ready.set()


class LazyZygote:
    """The warm-start zygote, started by the first child that needs one (a run with nothing
    stale starts none), or by `start_now`; None when it cannot start (the children then start cold)."""

    def __init__(self, cwd: str, env: dict):
        self._cwd, self._env = cwd, env
        self._lock = threading.Lock()
        self._zygote: Zygote | None = None  # started (by `start_now` or `get`)
        self._tried = False  # `get` waited for it to be ready, or it could not start

    def start_now(self) -> None:
        """Start the zygote at once, for a caller sure to need it: its imports (~1.6 s, torch's) run beside
        the caller's own work, and the first `get` waits only for what is left of them."""
        with self._lock:
            if self._zygote is None and not self._tried:
                self._zygote = self._started()

    def get(self) -> Zygote | None:
        with self._lock:
            if not self._tried:
                self._tried = True
                if self._zygote is None:
                    self._zygote = self._started()
                if self._zygote is not None:
                    try:
                        self._zygote.wait_ready()
                    except WarmStartUnavailable:
                        self._zygote = None
            return self._zygote

    def close(self) -> None:
        with self._lock:
            if self._zygote is not None:
                self._zygote.close()

    def _started(self) -> Zygote | None:
        try:
            return Zygote(cwd=self._cwd, env=self._env, wait=False)
        except (WarmStartUnavailable, OSError):
            return None


# ---------------------------------------------------------------- the zygote itself

def _send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with(parent: int) -> None:
    """In a forked child: be killed when `parent` (the zygote) dies. A zygote killed outright (SIGKILL:
    a Ray worker's children are killed with it) cannot kill its children itself, and a child in a
    session of its own would run on with no one to read what it leaves. Linux only; elsewhere the
    zygote's own clean-up on a closed stdin is all there is."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the request took hold
        os._exit(70)


def _run_child(job_path: str, log_path: str, zygote: int) -> None:
    """In the forked child: dies with the zygote, a session of its own, output to the log, then
    the cold child's main."""
    code = 70
    try:
        _die_with(zygote)
        os.setsid()
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.close(null)
        sys.argv = ["fidelity.perturb.child", job_path]
        from fidelity.perturb import child

        code = child.main([job_path])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _returncode(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _reap(children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid == 0:
            return
        children.discard(pid)
        _send({"exited": pid, "returncode": _returncode(status)})


def main(preload: list[str]) -> int:
    import importlib

    for name in preload:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # a library the gates do not need here: the children import what they use
    import gc

    # what the zygote holds stays out of every child's garbage collections (pytest collects
    # at exit; with torch loaded that was ~0.3 s a child) and its pages stay shared
    gc.collect()
    gc.freeze()
    _send({"ready": sorted(sys.modules)})
    children: set[int] = set()
    stdin = sys.stdin.buffer
    buffered = b""
    while True:
        readable, _, _ = select.select([stdin], [], [], 0.02)
        if readable:
            chunk = os.read(stdin.fileno(), 65536)
            if not chunk:  # the runner closed our stdin: kill what is left, then go
                for pid in children:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                while children:
                    pid, status = os.waitpid(-1, 0)
                    children.discard(pid)
                return 0
            buffered += chunk
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                req = json.loads(line)
                Path(req["log"]).parent.mkdir(parents=True, exist_ok=True)
                zygote = os.getpid()
                pid = os.fork()
                if pid == 0:
                    _run_child(req["job"], req["log"], zygote)
                children.add(pid)
                _send({"started": pid})
        _reap(children)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    # no interpreter shutdown: it holds nothing to write, and torch's teardown (~0.14 s) was time the runner
    # waited for at the end of every run
    os._exit(code)
