"""`python -m fidelity ARGV` for the tests, forked from a process that has imported what a check imports
(torch, numpy, pytest, sympy...: fidelity.gaterun.warm_pytest.PRELOAD), instead of a fresh interpreter
importing them again for every command the suite runs (~1.5 s of CPU a `check`, its gate run's fork
included).

The fork then is what a fresh `python -m fidelity` in `cwd` under `env` is: that working directory,
environment, import path (`cwd`, PYTHONPATH's folders, then the interpreter's own), `sys.argv`, the
`__main__` module run by runpy, stdin from /dev/null, its output in files read back, its exit code from
SystemExit and its exit handlers run as the interpreter's own shutdown runs them. fidelity itself is not
preloaded: every command imports it as a fresh one does. A command with interpreter options, or an
environment whose PYTHON* variables (other than PYTHONPATH) differ from this process's, runs in a fresh
interpreter, as does every command under FIDELITY_TESTS_FRESH_CLI=1 (the suite the slow, exact way).

One zygote per test process, started by its first command: `python tests/warm_cli.py MODULE...` imports
the modules, then reads one JSON request a line on stdin and answers {"id", "started"} then {"id",
"exited", "returncode"} on stdout.
"""
from __future__ import annotations

import itertools
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading

FRESH_ENV = "FIDELITY_TESTS_FRESH_CLI"


def fidelity(argv, *, cwd, env=None, timeout=None, python_options=()) -> subprocess.CompletedProcess:
    """`python [PYTHON_OPTIONS] -m fidelity ARGV` in `cwd` under `env` (default: this environment), its
    output captured as text: in a fork of the zygote (module docstring) where that is the same."""
    return python_m("fidelity", argv, cwd=cwd, env=env, timeout=timeout, python_options=python_options)


def python_m(module, argv, *, cwd, env=None, timeout=None, python_options=()) -> subprocess.CompletedProcess:
    """`python [PYTHON_OPTIONS] -m MODULE ARGV`, as `fidelity` runs it."""
    env = dict(os.environ if env is None else env)
    cmd = [sys.executable, *python_options, "-m", module, *argv]
    from fidelity.gaterun.warm_pytest import same_start_variables  # here: the zygote imports nothing of fidelity's

    same = same_start_variables(env, ignoring=("PYTHONPATH",))  # the fork builds its path from PYTHONPATH itself
    if python_options or os.environ.get(FRESH_ENV) or not same or not hasattr(os, "fork"):
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return _zygote().run(cmd, module, [str(a) for a in argv], str(cwd), env, timeout)


class _Zygote:
    def __init__(self):
        here_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        from fidelity.gaterun.warm_pytest import PRELOAD  # here: the zygote itself imports nothing of fidelity's
        self._proc = subprocess.Popen([sys.executable, __file__, *PRELOAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env=here_env, text=True, bufsize=1)
        ready = json.loads(self._proc.stdout.readline())
        assert ready.get("ready"), ready
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._replies: dict[int, dict] = {}
        self._arrived = threading.Condition(self._lock)
        self._gone = False
        threading.Thread(target=self._read, daemon=True, name="warm-cli-reader").start()

    def run(self, cmd, module, argv, cwd, env, timeout) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory(prefix="warm-cli-") as tmp:
            out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
            with self._lock:
                n = next(self._ids)
                self._proc.stdin.write(json.dumps({"id": n, "module": module, "argv": argv, "cwd": cwd, "env": env,
                                                   "stdout": out, "stderr": err}) + "\n")
                self._proc.stdin.flush()
                if not self._arrived.wait_for(lambda: "exited" in self._replies.get(n, {}) or self._gone,
                                              timeout=timeout):
                    started = self._replies.get(n, {}).get("started")
                    if started:
                        os.kill(started, signal.SIGKILL)
                    raise subprocess.TimeoutExpired(cmd, timeout)
                if "exited" not in self._replies.get(n, {}):
                    raise RuntimeError(f"the warm CLI's zygote ended (exit {self._proc.wait()}) before "
                                       f"`python -m {' '.join([module, *argv])}` did: run with {FRESH_ENV}=1")
                code = self._replies.pop(n)["returncode"]
            with open(out, encoding="utf-8", errors="replace") as o, open(err, encoding="utf-8", errors="replace") as e:
                return subprocess.CompletedProcess(cmd, code, o.read(), e.read())

    def _read(self):
        for line in self._proc.stdout:
            reply = json.loads(line)
            with self._lock:
                self._replies.setdefault(reply["id"], {}).update(reply)
                self._arrived.notify_all()
        with self._lock:  # the zygote ended: no command waits for it forever
            self._gone = True
            self._arrived.notify_all()


_ZYGOTE: list[_Zygote] = []
_STARTING = threading.Lock()


def _zygote() -> _Zygote:
    with _STARTING:
        if not _ZYGOTE:
            _ZYGOTE.append(_Zygote())
        return _ZYGOTE[0]


# ---------------------------------------------------------------- the zygote itself

def _serve(preload: list[str]) -> None:
    import gc

    for module in preload:
        __import__(module)
    # what the zygote holds stays out of every fork's garbage collections (a full one, at pytest's end
    # or as the command allocates, walked all of torch's objects: ~0.1 s each, its pages copied)
    gc.collect()
    gc.freeze()
    own_path = set(filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    base_path = [p for p in sys.path[1:] if p not in own_path]  # sys.path[0]: this file's folder
    running: dict[int, int] = {}  # pid -> request id
    _say({"ready": True})
    pending = b""
    while True:
        readable, _, _ = select.select([0], [], [], 0.02)
        _reap(running)
        if not readable:
            continue
        chunk = os.read(0, 1 << 16)
        if not chunk:  # the tests ended
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                _run(request, base_path)  # never returns
            running[pid] = request["id"]
            _say({"id": request["id"], "started": pid})


def _say(reply: dict) -> None:
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


def _reap(running: dict[int, int]) -> None:
    while running:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        _say({"id": running.pop(pid), "exited": True, "returncode": os.waitstatus_to_exitcode(status)})


def _run(request: dict, base_path: list[str]):
    """In the fork: become `python -m MODULE ARGV` in the request's folder and environment."""
    import runpy

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *extra, *base_path]
    for fd, name, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_CREAT),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT)):
        opened = os.open(name, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    for name, module in list(sys.modules.items()):  # this file is the zygote's, not the command's
        if getattr(module, "__file__", None) == __file__:
            del sys.modules[name]
    sys.argv = ["-m", *request["argv"]]
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    sys.exit(0)  # the interpreter's own shutdown: exit handlers run, then the exit code


if __name__ == "__main__":
    _serve(sys.argv[1:])
