"""Which functions of some files this process has called so far: what a kept result may depend on.

An instance's result can depend on any function its process called before it ended, not only on those
it called itself: an earlier instance may have left state it read (a cache, a kernel built on first
use), and collection runs code too. So the record is cumulative, from the moment it starts (a run's
start, inherited by a process forked after it) to the end of each instance: sound whatever state
the code keeps, and as precise as the process is short (one fork per gate file: forked_workers.py).

    calls = CallsSoFar([path, ...]); calls.start()
    ...; calls.seen()   # {path: [def line of each unit called]}, a file left out where it cannot be trusted

What is heard is the **units** function_meaning.py keys (a function at module or class level, its nested
functions, lambdas and comprehensions within it): a call of anything nested runs inside a call of its unit
in this process, or creates nothing to call. Each unit gets one marker call at the start of its body, put
in as its module is imported from source by a finder that goes first (only files outside the standard
library and the installed packages: the project's, a PYTHONPATH folder's; a test file or a conftest stays
pytest's; one whose asserts pytest rewrites keeps that). Nothing else runs differently: a tracer on every
call (sys.settrace) made the gates that run the Triton interpreter five times slower. A marker is heard in
every thread, the autograd engine's too.

`seen()` leaves a file out (the caller keys it whole) when its code ran other than as the module marked
here: imported before `start`, or run by a loader or an exec() of its own (the audit event of exec names
the code object). It is None, for the rest of the process, once the process started another that may run
the project's Python (audit events: a fork other than the runner's own, a shell, or a program that is
Python: the interpreter, or a script whose first line names it): its calls are not heard here. Another
program (`file`, a compiler) runs none of them.
"""
from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import importlib.machinery
import os
import shutil
import sys

from fidelity import function_meaning
from fidelity.function_meaning import unit_nodes
from fidelity.perturb import marked_code_cache
from fidelity.perturb.machine_neutral import installation_prefixes

ITEM_FIELD = "calls_so_far"  # the field of a child's result item that holds what `seen` said (pytest_plugin.py)
COLLECT_FIELD = "collect_calls"  # a collecting child's results: {"imported": files_run(), "heard": seen()} (index_reads.py)
MARKER = "__fidelity_called__"  # in builtins: found from any module's globals, and from a copy of a function's
_PROGRAM_AT = {"subprocess.Popen": 0, "os.posix_spawn": 0, "os.exec": 0, "os.spawn": 1}  # the event's argument
_ANY_CODE = frozenset({"os.fork", "os.forkpty", "os.system", "os.startfile", "pty.spawn"})  # may run anything
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "env", "xargs"})


class CallsSoFar:
    """`paths`: the files whose calls are kept; None: every marked file's, until `narrow` names them (a run
    that learns which files matter only once it has collected, and collection calls code too)."""

    def __init__(self, paths=None):
        self._wanted: dict[str, str] | None = None  # real path -> the path as named
        self._called: dict[tuple[str, int], None] = {}  # (real path, def line) of each unit heard, in order
        self._heard: dict[str, set[int]] = {}  # real path -> def lines, of the first `_placed` numbers heard
        self._placed = 0
        self._marked: dict[int, object] = {}  # id -> each module code object compiled here (held: the id stays its)
        self._ran_unmarked: list[str] = []  # file names whose module code ran without the markers, as heard
        self._unmarked: set[str] = set()  # the real paths of the first `_resolved` of them
        self._real_folders: dict[str, str] = {}  # folder as named -> its real path (a run names thousands of files)
        self._reals: dict = {}  # file name as named (a relative one with the working directory) -> its real path
        self._resolved = 0
        self._trusted = True
        self._started = False
        self._own_fork = False
        if paths is not None:
            self.narrow(paths)

    def start(self) -> None:
        """Listen from now on: modules imported from source after this carry the markers (and forked
        children go on listening); a module of a wanted file imported before is not heard (`seen`)."""
        self._ran_unmarked += [f for m in list(sys.modules.values())
                               if isinstance(f := getattr(m, "__file__", None), str)]
        sys.addaudithook(self._audit)  # cannot be removed: it only marks files or the record untrusted
        setattr(builtins, MARKER, self._called.setdefault)
        sys.meta_path.insert(0, _MarkingFinder(self, installation_prefixes()))
        self._started = True

    def narrow(self, paths) -> None:
        """Keep only the calls of `paths`: those heard so far and from now on."""
        self._wanted = {os.path.realpath(p): p for p in paths}

    def fork(self) -> int:
        """os.fork() by the runner itself (a worker per gate file), not counted as a process the code under
        test started: the child goes on listening, with what the parent heard so far."""
        self._resolve_unmarked()  # once here, not again in every fork
        self._own_fork = True
        try:
            return os.fork()
        finally:
            self._own_fork = False

    def seen(self) -> dict[str, list[int]] | None:
        """{wanted path: sorted def lines of the units called}, less the files whose code ran unmarked; None
        when not started, not narrowed, or untrusted (module doc)."""
        if not self._started or not self._trusted or self._wanted is None:
            return None
        self._resolve_unmarked()
        called = list(self._called)  # one copy: a thread of the code under test may add to it meanwhile
        for real, line in called[self._placed:]:
            self._heard.setdefault(real, set()).add(line)
        self._placed = len(called)
        return {p: sorted(self._heard.get(real, ())) for real, p in self._wanted.items() if real not in self._unmarked}

    def files_run(self) -> list[str]:
        """The real paths of the files outside the installed packages and the standard library whose module
        code ran in this process so far: imported with the markers, or without (before `start`, or by a
        loader of their own). A file not named was never imported here (index_reads.py)."""
        self._resolve_unmarked()
        ran = {self._real(code.co_filename) for code in self._marked.values()} | self._unmarked
        installed = installation_prefixes()
        return sorted(f for f in ran if os.path.isabs(f) and not f.startswith(installed))

    def _resolve_unmarked(self) -> None:
        """The real paths of the files that ran unmarked since the last call, into `_unmarked`."""
        unmarked = self._ran_unmarked[self._resolved:]  # read once each: seen() is asked per instance
        self._resolved += len(unmarked)
        self._unmarked.update(map(self._real, unmarked))

    def _real(self, path: str) -> str:
        """os.path.realpath(path), each name resolved once (an exec() of generated code, a dataclass's or a
        namedtuple's, names "<string>" thousands of times), each folder once: the same answer, a fraction of
        the system calls. A relative name is kept by the working directory it was resolved in."""
        key = path if os.path.isabs(path) else (os.getcwd(), path)
        real = self._reals.get(key)
        if real is None:
            folder, name = os.path.split(path)
            if not os.path.isabs(folder) or name in ("", ".", "..") or os.path.islink(path):
                real = os.path.realpath(path)
            else:
                real_folder = self._real_folders.get(folder)
                if real_folder is None:
                    real_folder = self._real_folders[folder] = os.path.realpath(folder)
                real = os.path.join(real_folder, name)
            self._reals[key] = real
        return real

    def compile_marked(self, source: bytes, path: str, pytest_config=None):
        """The module code of `path` with a marker at the start of each unit's body (and its asserts
        rewritten as pytest does, given pytest's config), kept beside it for the next process
        (marked_code_cache.py); None when it does not parse (it is then imported as it is, and heard as
        unmarked)."""
        real = self._real(path)
        kept_under = marked_code_cache.key(source, path, real, _rewriting(pytest_config), _marking())
        code = marked_code_cache.load(path, kept_under)
        if code is None:
            code = _marked_code(source, path, real, pytest_config)
            if code is None:
                return None
            marked_code_cache.store(path, kept_under, code)
        self._marked[id(code)] = code
        return code

    def _audit(self, event: str, args, _any_code=_ANY_CODE, _program_at=_PROGRAM_AT) -> None:
        # the constants bound as defaults: audit hooks run at interpreter exit too, after the globals are gone
        if event == "exec":
            code = args[0]
            if id(code) not in self._marked and hasattr(code, "co_filename"):
                self._ran_unmarked.append(code.co_filename)
        elif event in _any_code and not (self._own_fork and event == "os.fork"):
            self._trusted = False
        elif event in _program_at and may_run_python(args[_program_at[event]]):
            self._trusted = False


def _marked_code(source: bytes, path: str, real: str, pytest_config=None):
    """`compile_marked`'s code, compiled here. A marker names its unit by (real path, def line): the same in
    every process, so the code can be kept."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return None
    for node, _ in unit_nodes(tree):
        body = node.body
        at = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str) else 0  # after the docstring: it stays the docstring
        mark = ast.Expr(ast.Call(ast.Name(MARKER, ast.Load()), [ast.Constant((real, node.lineno))], []))
        anchor = body[min(at, len(body) - 1)]  # its lines: a traceback through the marker names them
        for part in ast.walk(mark):
            ast.copy_location(part, anchor)
        body.insert(at, mark)
    if pytest_config is not None:
        from _pytest.assertion.rewrite import rewrite_asserts

        rewrite_asserts(tree, source, path, pytest_config)
    return compile(tree, path, "exec", dont_inherit=True)  # every marker node has its lines


@functools.lru_cache(maxsize=None)
def _marking() -> bytes:
    """The hash of the code that marks (this file, and function_meaning.py's units): an edit to it makes every
    kept marked module stale."""
    digest = hashlib.sha256()
    for file in (__file__, function_meaning.__file__):
        with open(file, "rb") as f:
            digest.update(f.read())
    return digest.digest()


def _rewriting(pytest_config) -> str:
    """What pytest's rewriting of a module's asserts depends on beyond its source ("" where it does not)."""
    if pytest_config is None:
        return ""
    import pytest

    return f"pytest {pytest.__version__}, pass hook {bool(pytest_config.getini('enable_assertion_pass_hook'))}"


class _MarkingFinder:
    """First of the finders: a module that those after it find as a source file outside `installed` (the
    standard library, the installed packages) is loaded with the markers, unless it is a test file or a
    conftest, which stay pytest's. A module pytest would rewrite the asserts of (a pytest plugin's package,
    such as fidelity's own) keeps that rewriting too."""

    def __init__(self, calls: CallsSoFar, installed: tuple[str, ...]):
        self.calls, self.installed = calls, installed

    def find_spec(self, fullname, path=None, target=None):
        later = sys.meta_path[sys.meta_path.index(self) + 1:] if self in sys.meta_path else []
        for finder in later:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        origin = spec.origin or ""
        if not origin.endswith(".py") or os.path.realpath(origin).startswith(self.installed):
            return spec
        if type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _MarkingLoader(fullname, origin, self.calls)
        elif _rewrites_asserts(spec.loader) and not _test_file(spec.loader, origin):
            spec.loader = _MarkingLoader(fullname, origin, self.calls, pytest_config=spec.loader.config)
        return spec


def _rewrites_asserts(loader) -> bool:
    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    return rewrite is not None and isinstance(loader, rewrite.AssertionRewritingHook)


def _test_file(hook, origin: str) -> bool:
    """Whether pytest rewrites `origin` as a test file or a conftest (its hook's own rule, less a path given
    on the command line: a gate file is never a target)."""
    from _pytest.pathlib import fnmatch_ex

    return os.path.basename(origin) == "conftest.py" or any(fnmatch_ex(pat, origin) for pat in hook.fnpats)


class _MarkingLoader(importlib.machinery.SourceFileLoader):
    """Compiles from source with the markers (and pytest's assert rewriting, given its config), or reads that
    code back from where the last process kept it (marked_code_cache.py); never Python's own .pyc, which holds
    neither."""

    def __init__(self, fullname: str, path: str, calls: CallsSoFar, pytest_config=None):
        super().__init__(fullname, path)
        self._calls, self._pytest_config = calls, pytest_config

    def get_code(self, fullname):
        source = self.get_data(self.path)
        code = self._calls.compile_marked(source, self.path, self._pytest_config)
        return code if code is not None else self.source_to_code(source, self.path)


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
