"""How the gate run's child pytest starts: forked from `fidelity check` once it holds torch and pytest,
where a fork is as good as a fresh interpreter, else a fresh `python -m pytest`.

A check's parent imports torch itself (its code stage resolves the project's modules; `--subject` loads
the adapters), and the fresh pytest it started imported torch and pytest again: ~1.5 s of this machine's
CPU a check, most of a small subject's run. So the parent imports them (where it has not), then forks a
waits for its command (`WarmPytest.run`). A subject's check forks it before the adapters load: their
modules are imported by the gate run itself, their state fresh and their calls heard.

The fork is made only when it starts as a fresh run would (else `fork_if_safe` returns None):
- no other thread in this process before it imports the preload, native ones counted
  (`/proc/self/task`): a fork keeps the locks another thread held, and GNU OpenMP's pool, once a
  parallel region has started it (its threads stay), hangs the fork's first parallel region
  (fork_threads.py). Importing numpy starts OpenBLAS's pool, which a fork makes again (its
  pthread_atfork handlers): so a process that imported torch itself has a thread and is not forked,
  while a fork of one (a zygote's child) has none until it computes;
- no module imported but the standard library's, the installed packages' and fidelity's own harness
  (the gate run's plugins import it too): no module of the project's code (fidelity.impl here), a test
  or an adapter. A harness module imported before the gate run listens is keyed whole in its kept
  results (calls_so_far.py), as the plugins' own modules are; no gate targets one;
- this process's interpreter flags those of a fresh one (no `-O`, no `-X`), and the command's
  environment equal to this process's in every PYTHON* variable (`takes`): the import path, hash seed
  and bytecode settings are those a fresh interpreter would have.
The fork takes the command's environment, working directory and import path (the root first, as
`python -m pytest` puts it), a session of its own (the caller kills its process group), and torch's
threads as torch counts them under that environment. It leaves by os._exit: the parent's exit
handlers (its temporary folders) are not the fork's to run.
"""
from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time

from fidelity.gaterun.fork_threads import threads_torch_starts_with
from fidelity.perturb import warm_start
from fidelity.perturb.fork_exit import run_then_exit
from fidelity.perturb.machine_neutral import installation_prefixes
from fidelity.perturb.preload import preload_for

POLL_S = 0.02  # how often `wait` looks for the fork's end
# What the gate run's pytest imports, of what the project names (preload.py): the runner's zygote's (which
# leaves out triton, and says why) but hypothesis, which a gate run does not import.
PRELOAD = tuple(m for m in warm_start.PRELOAD if m != "hypothesis")


def start(cmd: list[str], *, cwd: str, env: dict[str, str], stdout, stderr, warm: "WarmPytest | None" = None):
    """`cmd` (`python -m pytest ARGS`) running, waited on like a Popen: in `warm` (or a fork made now)
    where that is safe, else in a fresh interpreter. `stdout`, `stderr`: open files; its own session."""
    if warm is None:
        warm = WarmPytest.fork_if_safe(cwd)
    if warm is not None:
        if warm.takes(env):
            return warm.run(cmd[cmd.index("pytest") + 1:], cwd=cwd, env=env, stdout=stdout.name, stderr=stderr.name)
        warm.close()
    return subprocess.Popen(cmd, cwd=cwd, stdout=stdout, stderr=stderr, text=True, start_new_session=True, env=env)


class WarmPytest:
    """A fork of this process, holding PRELOAD, waiting for the one pytest it runs."""

    @classmethod
    def fork_if_safe(cls, root: str) -> "WarmPytest | None":
        """The fork (module docstring), or None where it would not start as a fresh interpreter does."""
        start_path = _fresh_import_path(root) if _forks_like_a_fresh_start() else None
        if start_path is None:
            return None
        for module in preload_for(root, PRELOAD):
            try:
                __import__(module)
            except ImportError:  # the gate run imports what it needs, or says it cannot
                pass
        return cls(start_path)

    def __init__(self, start_path: list[str]):
        read_end, self._pipe = os.pipe()
        sys.stdout.flush(), sys.stderr.flush()  # nothing buffered here is written twice
        # what this process holds (torch's ~200k objects) is left out of its later full garbage collections
        # and the fork's: each walked all of it, ~0.1 s, copying the fork's pages (uncollected, it stays)
        gc.freeze()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self._pipe)
            _serve(read_end, start_path)  # never returns
        os.close(read_end)
        self.returncode: int | None = None

    def takes(self, env: dict[str, str]) -> bool:
        """Whether a command under `env` may run here: every PYTHON* variable as in this process."""
        return same_start_variables(env)

    def run(self, args: list[str], *, cwd: str, env: dict[str, str], stdout: str, stderr: str) -> "WarmPytest":
        """pytest ARGS in the fork, from `cwd` under `env`, its output appended to the files `stdout`,
        `stderr`; returns self."""
        message = json.dumps({"args": args, "cwd": str(cwd), "env": env, "stdout": stdout, "stderr": stderr})
        with os.fdopen(self._pipe, "wb") as pipe:
            pipe.write(message.encode())
        self._pipe = None
        return self

    def close(self) -> None:
        """Not used after all: the fork ends, its pipe closed without a command."""
        if self._pipe is not None:
            os.close(self._pipe)
            self._pipe = None
        self.wait()

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(["pytest (forked)"], timeout)
            time.sleep(POLL_S)
        return self.returncode


def same_start_variables(env: dict[str, str], ignoring: tuple[str, ...] = ()) -> bool:
    """Whether `env` holds every variable Python reads as it starts (PYTHON*), but `ignoring`, as this process's
    does: a fork of this process under `env` starts with the hash seed, flags and paths a fresh one would."""
    names = {n for n in (*env, *os.environ) if n.startswith("PYTHON") and n not in ignoring}
    return all(env.get(n) == os.environ.get(n) for n in names)


def _forks_like_a_fresh_start() -> bool:
    """Whether a fork of this process, now, starts as a fresh interpreter would (module docstring)."""
    if not hasattr(os, "fork"):
        return False
    try:
        if len(os.listdir("/proc/self/task")) != 1:
            return False
    except OSError:  # no way to count the native threads here
        return False
    harness = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep
    not_harness = harness + "impl" + os.sep  # the reference subject's code: what gates target, not the harness
    installed = installation_prefixes()  # what calls_so_far never marks: the standard library, site-packages
    for name, module in list(sys.modules.items()):
        if name == "__main__":  # the program that started this one (`fidelity`'s script): the gate run never runs it
            continue
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not os.path.isabs(path):  # no file it was read from (torch.ops: "_ops.py")
            continue
        path = os.path.realpath(path)
        if not (path.startswith(installed) or (path.startswith(harness) and not path.startswith(not_harness))):
            return False
    return True


def _fresh_import_path(root: str) -> list[str] | None:
    """sys.path of `python -m pytest` started in `root` under this environment: the root, then what a
    fresh interpreter adds (PYTHONPATH, the standard library, site-packages and their .pth lines), asked
    of one (~20 ms). None when it cannot be asked, or when this process runs under other flags than it
    (`python -O`, `-X ...`: a fork would keep them, the fresh pytest would not)."""
    probe = "import json, sys; print(json.dumps([sys.path[1:], repr(sys.flags), sys._xoptions]))"
    try:
        out = subprocess.run([sys.executable, "-c", probe],
                             cwd=root, capture_output=True, text=True, timeout=60, check=True).stdout
        path, flags, xoptions = json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if (flags, xoptions) != (repr(sys.flags), sys._xoptions):
        return None
    return [str(root), *path]


def _serve(read_end: int, start_path: list[str]):
    """In the fork: wait for the command, run it, leave by os._exit (pytest's exit code; 0 with no command,
    1 when the fork itself failed, its traceback in the command's stderr or this process's)."""
    def work() -> int:
        os.setsid()  # at once: a ^C meant for the parent's group is not this fork's
        with os.fdopen(read_end, "rb") as pipe:
            message = pipe.read()
        if not message:
            return 0
        command = json.loads(message)
        for target, name in ((1, command["stdout"]), (2, command["stderr"])):
            fd = os.open(name, os.O_WRONLY | os.O_APPEND)
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(command["cwd"])
        os.environ.clear()
        os.environ.update(command["env"])
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.path[:] = start_path
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(threads_torch_starts_with(os.environ))
        import pytest

        sys.argv = [pytest.__file__, *command["args"]]
        return int(pytest.main(command["args"]))

    run_then_exit(work, when_raised=1)
