"""Which functions of some files this process has called so far: what a kept result may depend on.

An instance's result can depend on any function its process called before it ended, not only on those
it called itself: an earlier instance may have left state it read (a cache, a kernel built on first
use), and collection runs code too. So the record is cumulative, from the moment it starts (a run's
start, inherited by a process forked after it) to the end of each instance: sound whatever state
the code keeps, and as precise as the process is short (one fork per gate file: forked_workers.py).

    calls = CallsSoFar([path, ...]); calls.start()
    ...; calls.seen()   # {path: [first line of each code object called]}, or None: not to be trusted

Only call events are heard (no line tracing), and only frames of the wanted files are kept. `seen()` is
None, for the rest of the process, once what it saw may be incomplete:
  - another tracer was set (the audit event of sys.settrace: a debugger, coverage, hypothesis's explain
    phase), even if this one was put back afterwards: the calls made meanwhile went unheard;
  - the process started another that may run the project's Python (audit events: a fork other than the
    runner's own, a shell, or a program that is Python: the interpreter, or a script whose first line names
    it): its calls are not heard here. Another program (`file`, a compiler) runs none of them;
  - CUDA was initialised: the autograd engine runs a Python backward on a device thread that no Python
    tracer reaches (threads started with `threading` are traced).
The caller keys such a result by whole files, as without a trace.
"""
from __future__ import annotations

import os
import shutil
import sys
import threading

_PROGRAM_AT = {"subprocess.Popen": 0, "os.posix_spawn": 0, "os.exec": 0, "os.spawn": 1}  # the event's argument
_ANY_CODE = frozenset({"os.fork", "os.forkpty", "os.system", "os.startfile", "pty.spawn"})  # may run anything
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "env", "xargs"})


class CallsSoFar:
    """`paths`: the files whose calls are kept; None: every file's, until `narrow` names them (a run that
    learns which files matter only once it has collected, and collection calls code too)."""

    def __init__(self, paths=None):
        self._wanted: dict[str, str] | None = None
        self._known: dict[str, str | None] = {}  # co_filename -> the wanted path it is, or None
        self._calls: dict[str, set[int]] = {}  # a wanted path (or, before narrowing, a co_filename) -> first lines
        if paths is not None:
            self.narrow(paths)
        self._trusted = True
        self._started = False
        self._own_fork = False

    def start(self) -> None:
        """Listen from now on, in this thread and every thread started after (and in forked children)."""
        sys.addaudithook(self._audit)  # cannot be removed: it only marks this record untrusted
        threading.settrace(self._call)
        self._started = True
        sys.settrace(self._call)

    def narrow(self, paths) -> None:
        """Keep only the calls of `paths` from now on, and those of them heard so far."""
        wanted = {os.path.realpath(p): p for p in paths}
        calls: dict[str, set[int]] = {p: set() for p in wanted.values()}
        for filename, lines in self._calls.items():
            path = wanted.get(os.path.realpath(filename)) if self._wanted is None else filename
            if path in calls:
                calls[path] |= lines
        self._wanted, self._known, self._calls = wanted, {}, calls

    def fork(self) -> int:
        """os.fork() by the runner itself (a worker per gate file), not counted as a process the code under
        test started: the child goes on listening, with what the parent heard so far."""
        self._own_fork = True
        try:
            return os.fork()
        finally:
            self._own_fork = False

    def seen(self) -> dict[str, list[int]] | None:
        """{wanted path: sorted first lines of the code objects called}, or None when incomplete (module doc)."""
        # `!=`: the tracer is a bound method, equal to self._call but never the same object
        if not self._started or sys.gettrace() != self._call or _cuda_initialised():
            self._trusted = False
        if not self._trusted or self._wanted is None:
            return None
        return {p: sorted(lines) for p, lines in self._calls.items()}

    def _call(self, frame, event, arg):
        filename = frame.f_code.co_filename
        if self._wanted is None:  # not narrowed yet: every file's
            self._calls.setdefault(filename, set()).add(frame.f_code.co_firstlineno)
            return None
        try:
            path = self._known[filename]
        except KeyError:
            path = self._known[filename] = self._wanted.get(os.path.realpath(filename))
        if path is not None:
            self._calls[path].add(frame.f_code.co_firstlineno)
        return None  # no line events: only calls are needed

    def _audit(self, event: str, args, _any_code=_ANY_CODE, _program_at=_PROGRAM_AT) -> None:
        # the constants bound as defaults: audit hooks run at interpreter exit too, after the globals are gone
        if event in _any_code and not (self._own_fork and event == "os.fork"):
            self._trusted = False
        elif event in _program_at and may_run_python(args[_program_at[event]]):
            self._trusted = False
        elif event == "sys.settrace" and self._started and not self._ours_set():
            self._trusted = False  # another tracer: even put back later, the calls meanwhile went unheard

    def _ours_set(self) -> bool:
        """Whether the sys.settrace being made sets this record's tracer: start(), or a thread started after it
        taking threading's hook (ours while threading.gettrace() is)."""
        caller = sys._getframe(2)  # 0: this, 1: _audit, 2: whoever called sys.settrace
        if caller.f_code is CallsSoFar.start.__code__:
            return True
        return caller.f_code.co_name == "_bootstrap_inner" and threading.gettrace() == self._call


def may_run_python(program) -> bool:
    """Whether a started program may run the project's Python: a shell, the interpreter (by its path or its
    name), a script whose first line names python, or a program that cannot be read (not known: it may)."""
    program = os.fsdecode(program) if isinstance(program, (str, bytes, os.PathLike)) else None
    if not program:
        return True
    name = os.path.basename(program)
    if name in _SHELLS or name.startswith("python") or os.path.realpath(program) == os.path.realpath(sys.executable):
        return True
    found = program if os.sep in program else shutil.which(program)
    try:
        with open(found, "rb") as f:
            first = f.readline(256)
    except (OSError, TypeError):
        return True
    return first.startswith(b"#!") and b"python" in first


def _cuda_initialised() -> bool:
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_initialized())
