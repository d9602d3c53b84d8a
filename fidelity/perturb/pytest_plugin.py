"""The pytest plugin a runner child loads (`-p fidelity.perturb.pytest_plugin`).

It is inert unless a results path is given (`--fidelity-results PATH` or the
environment variable FIDELITY_PERTURB_RESULTS). It only registers the `gate`
and `gate_targets` markers then.

collect mode (`--fidelity-mode collect`, with `--collect-only`): one entry per
collected item: nodeid, gate id (the nodeid up to '['), file, equations and
targets (the `gate` marker's `targets` united with every `gate_targets`
marker a conftest added at collection), and the collection errors.

run mode (the default): before each test the readings store
(`fidelity.gates.readings`) is reset; after it, one entry per item:
  outcome    passed | failed | error | skipped
  phase      setup | call | teardown (where it failed or skipped)
  kind       "assertion" when the failure is an AssertionError (or subclass)
             raised in the call phase by the gate's own code: every frame from
             the test function to the raise lies in the test's file, its
             directory, a conftest, `fidelity/gates/`, or an assertion library
             (pytest, torch.testing, numpy.testing, unittest), and none in the
             subject's patched file (`--fidelity-subject-file`); "other" for
             anything else (ImportError, a shape RuntimeError, an assert inside
             the subject, pytest.fail, a fixture error, a strict XPASS)
  exc_type, message (first 2000 characters), raised_in (file:line)
  readings   the readings the test recorded (non-finite as "NaN"/"Infinity")
  checks     the equations the instance is attributed to when it fails: those the failing assertion's
             checking() block names (fidelity.gates.attribution), else its parameter's gate_checks, else []
  fixtures_read  files under `--fidelity-fixtures DIR` opened while the test
             ran, while a pytest fixture it uses was set up, or while its
             module was collected (an audit hook on the "open" event, and on the
             fixture store's READ_AUDIT_EVENT for a fixture it parsed earlier).
Each item is also appended as a line to RESULTS.partial as soon as it ends
(and a "start" line when it begins), so a child that crashes or is killed
leaves what it did and which test it was in.

Under pytest-xdist (`-n N`, as `fidelity check` runs the suite on every core) the controller
records nothing; worker W writes RESULTS.W (and RESULTS.W.partial) with its share of the
items and `order`, the collection order every worker shares, by which the shares are merged
back into the order of a serial run (check/gates_stage.py).
"""
from __future__ import annotations

import inspect
import json
import os
import re
import sys
import time
import traceback

import pytest

from fidelity.evidence import jsonio
from fidelity.fixtures import READ_AUDIT_EVENT
from fidelity.gates.attribution import checked_by
from fidelity.perturb import seeding
from fidelity.perturb.line_trace import LinesExecuted

RESULTS_ENV = "FIDELITY_PERTURB_RESULTS"
MODE_ENV = "FIDELITY_PERTURB_MODE"
FIXTURES_ENV = "FIDELITY_PERTURB_FIXTURES"
SUBJECT_ENV = "FIDELITY_PERTURB_SUBJECT_FILES"  # os.pathsep-separated
MESSAGE_LIMIT = 2000
ALREADY_RED = "not run: an earlier instance of this gate already failed by its own assertion"
ANOTHER_RED = "not run: another gate already failed by its own assertion"
FORMAT = 1

_ASSERTION_LIBRARIES = tuple(
    os.sep + os.path.join(*parts) + os.sep
    for parts in (("_pytest",), ("pytest",), ("torch", "testing"), ("numpy", "testing"), ("unittest",))
)


def gate_id(nodeid: str) -> str:
    """The gate a test instance belongs to: its nodeid without parametrisation."""
    return nodeid.split("[", 1)[0]


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    out: list[str] = []
    for v in value:
        out.extend(_as_list(v))
    return out


def gate_markers(item) -> dict:
    """Equations and targets from an item's `gate` and `gate_targets` markers."""
    equations: set[str] = set()
    targets: set[str] = set()
    marked = False
    mechanism = gate_class = None
    for m in item.iter_markers("gate"):
        marked = True
        equations.update(_as_list(m.kwargs.get("equations", m.args[0] if len(m.args) > 0 else None)))
        targets.update(_as_list(m.kwargs.get("targets", m.args[1] if len(m.args) > 1 else None)))
        mechanism = mechanism or m.kwargs.get("mechanism")
        gate_class = gate_class or m.kwargs.get("gate_class")
    for m in item.iter_markers("gate_targets"):
        targets.update(_as_list(m.args))
        targets.update(_as_list(m.kwargs.get("targets")))
    checks = sorted({e for m in item.iter_markers("gate_checks") for e in _as_list(m.args)})
    subject = item.get_closest_marker("gate_subject")
    skip = item.get_closest_marker("skip")
    skip_reason = (skip.kwargs.get("reason") or (skip.args[0] if skip.args else "unconditional skip")) if skip else None
    return {"gate_marker": marked, "equations": sorted(equations), "checks": checks, "targets": sorted(targets),
            "mechanism": mechanism, "gate_class": gate_class,
            "subject": subject.args[0] if subject else None, "device": subject.args[1] if subject else None,
            "skip_marker": skip_reason}


def pytest_addoption(parser):
    group = parser.getgroup("fidelity-perturb", "fidelity perturbation runner")
    group.addoption("--fidelity-mode", choices=["collect", "run"], default=None, help="collect or run (default: run)")
    group.addoption("--fidelity-results", default=None, help="write results JSON here")
    group.addoption("--fidelity-fixtures", default=None, help="record files opened under this directory")
    group.addoption("--fidelity-subject-file", action="append", default=[], help="the patched subject's source file")
    group.addoption("--fidelity-keep", default=None,
                    help="a JSON list of node ids: every other collected test is deselected (run mode)")
    group.addoption("--fidelity-stop-gate-when-red", action="store_true", default=False,
                    help="run a gate's instances in node-id order and skip the rest once one fails by assertion")
    group.addoption("--fidelity-trace-lines", action="append", default=[], metavar="FILE",
                    help="record, per test, the lines of FILE it executed and the functions of FILE it called "
                         "(a mutant of FILE then runs only the tests that reach its lines)")
    group.addoption("--fidelity-seed", action="store_true", default=False,
                    help="seed the global random generators just before the first test runs (a patched "
                         "child: seeding.py)")
    group.addoption("--fidelity-stop-when-any-red", action="store_true", default=False,
                    help="skip every remaining instance once any gate fails by assertion (blind-spot discovery "
                         "needs one killing gate, not all of them)")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Before any conftest or test module imports a perturbation target: the patch's finder
    goes ahead of the assertion rewriter pytest has just installed."""
    from fidelity.perturb import import_hook

    import_hook.put_first()


def pytest_configure(config):
    config.addinivalue_line("markers", "gate(equations, targets): a fidelity gate checking equations on target modules")
    config.addinivalue_line("markers", "gate_targets(*modules): more target modules of a fidelity gate")
    results = config.getoption("--fidelity-results") or os.environ.get(RESULTS_ENV)
    if not results:
        return
    worker = worker_id(config)
    if worker is None and getattr(config.option, "dist", "no") != "no":
        return  # a pytest-xdist controller runs no test: each worker records its share, below
    if worker is not None:
        results = worker_results(results, worker)
    mode = config.getoption("--fidelity-mode") or os.environ.get(MODE_ENV) or "run"
    fixtures = config.getoption("--fidelity-fixtures") or os.environ.get(FIXTURES_ENV)
    subjects = list(config.getoption("--fidelity-subject-file") or [])
    if os.environ.get(SUBJECT_ENV):
        subjects += [p for p in os.environ[SUBJECT_ENV].split(os.pathsep) if p]
    recorder = Recorder(mode, results, fixtures, subjects, rootdir=str(config.rootpath),
                        keep=_read_keep(config.getoption("--fidelity-keep")),
                        stop_gate_when_red=config.getoption("--fidelity-stop-gate-when-red"),
                        stop_when_any_red=config.getoption("--fidelity-stop-when-any-red"),
                        trace_lines=config.getoption("--fidelity-trace-lines"), worker=worker,
                        seed=config.getoption("--fidelity-seed"))
    config.pluginmanager.register(recorder, "fidelity-perturb-recorder")


_ADDRESS = re.compile(r"(?<= at )0x[0-9a-fA-F]+")


def without_addresses(message: str) -> str:
    """`message` with the memory addresses of object reprs ("<built-in method equal of type object at
    0x7f3e...>", as pytest's assertion rewriting prints them) as "0x..": they change in every process,
    and a record must read the same whichever run or machine wrote it."""
    return _ADDRESS.sub("0x..", message)


def shown_path(path: str, rootdir: str | None, installed: list[str] | None = None) -> str:
    """`path` as a record names it (POSIX separators): an installed file relative to the deepest installation
    folder holding it (site-packages, the standard library: "torch/nn/functional.py"), even where a venv lies
    inside the project; else relative to `rootdir` when inside it; else as it is. Where packages are installed
    differs between machines and venvs, and a record must read the same whichever of them wrote it."""
    folders = [os.path.join(os.path.abspath(f), "") for f in (_installation_folders() if installed is None
                                                             else installed)]
    holding = max((f for f in folders if path.startswith(f)), key=len, default=None)
    if holding is None and rootdir and path.startswith(rootdir):
        holding = rootdir
    return path if holding is None else path[len(holding):].replace(os.sep, "/")


def _installation_folders() -> list[str]:
    import sysconfig

    paths = sysconfig.get_paths()
    return [paths[k] for k in ("purelib", "platlib", "stdlib", "platstdlib") if k in paths]


def worker_id(config) -> str | None:
    """This process's pytest-xdist worker id ("gw0", ...), or None when it is not a worker."""
    return getattr(config, "workerinput", {}).get("workerid")


def worker_results(results: str, worker: str) -> str:
    """Where worker `worker` of a distributed run writes its results (and, beside them, .partial)."""
    return f"{results}.{worker}"


# The audit hook cannot be removed once added; it forwards to the active recorder.
_ACTIVE = None
_AUDIT_INSTALLED = False


def _audit(event, args):
    if event not in ("open", READ_AUDIT_EVENT) or _ACTIVE is None:
        return
    try:
        _ACTIVE._on_open(args[0])
    except Exception:
        pass


def _availability() -> list[dict] | None:
    """The subjects as this process sees them (registry.availability); None when they cannot be loaded
    (the gates' own collection says why); [] when no gate loaded the registry: a suite whose gates take
    no subject has none to describe, and asking would import torch into every such process (~2.5 s)."""
    if "fidelity.subjects.registry" not in sys.modules:
        return []
    from fidelity.subjects.registry import SubjectLoadError, availability

    try:
        return availability()
    except SubjectLoadError:
        return None


class Recorder:
    def __init__(self, mode: str, results: str, fixtures: str | None, subject_files: list[str], rootdir: str | None = None,
                 keep: set[str] | None = None, stop_gate_when_red: bool = False, stop_when_any_red: bool = False,
                 trace_lines: list[str] = (), worker: str | None = None, seed: bool = False):
        global _ACTIVE, _AUDIT_INSTALLED
        self.mode = mode
        self.seed = seed
        self.worker = worker
        self._order: list[str] = []  # a worker's collection order: the merge restores a serial run's order
        self.keep = keep
        self.stop_gate_when_red = stop_gate_when_red or stop_when_any_red
        self.stop_when_any_red = stop_when_any_red
        self.trace_lines = [os.path.abspath(p) for p in trace_lines]
        self._red_gates: set[str] = set()  # gates with an instance failed by assertion (stop mode)
        self.rootdir = os.path.abspath(rootdir) + os.sep if rootdir else None
        self.results = os.path.abspath(results)
        self.subject_files = {os.path.abspath(p) for p in subject_files}
        self.items: list[dict] = []
        self.collected: list[dict] = []
        self.collect_errors: list[dict] = []
        self._stack: list[str] = []
        self._buckets: dict[str, set[str]] = {}
        self._current: dict | None = None
        import fidelity.gates.readings as readings

        self._readings = readings
        self._gates_dir = os.path.dirname(os.path.abspath(readings.__file__)) + os.sep
        self._prefixes: tuple[str, ...] = ()
        if fixtures:
            fx = os.path.abspath(fixtures)
            self._prefixes = tuple({fx + os.sep, os.path.realpath(fx) + os.sep})
        self._partial = None
        if mode == "run":
            os.makedirs(os.path.dirname(self.results), exist_ok=True)
            self._partial = open(self.results + ".partial", "w", encoding="utf-8")
            if self._prefixes:
                _ACTIVE = self
                if not _AUDIT_INSTALLED:
                    sys.addaudithook(_audit)
                    _AUDIT_INSTALLED = True

    # ---- fixture files -------------------------------------------------
    def _on_open(self, path) -> None:
        if isinstance(path, int):
            return
        path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        full = os.path.abspath(path)
        if not full.startswith(self._prefixes):
            return
        key = self._stack[-1] if self._stack else "session"
        self._buckets.setdefault(key, set()).add(full)

    def _fixtures_of(self, item) -> list[str]:
        files: set[str] = set(self._buckets.get("item:" + item.nodeid, ()))
        for node in item.listchain():
            files |= self._buckets.get("collector:" + node.nodeid, set())
        info = getattr(item, "_fixtureinfo", None)
        for defs in (getattr(info, "name2fixturedefs", None) or {}).values():
            for fd in defs:
                files |= self._buckets.get(_fixture_key(fd), set())
        return sorted(files)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector):
        self._stack.append("collector:" + collector.nodeid)
        try:
            return (yield)
        finally:
            self._stack.pop()

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        self._stack.append(_fixture_key(fixturedef))
        try:
            return (yield)
        finally:
            self._stack.pop()

    # ---- collection ----------------------------------------------------
    def pytest_collectreport(self, report):
        if report.failed:
            text = str(report.longrepr)
            self.collect_errors.append({
                "nodeid": report.nodeid,
                "exc_type": _exc_type_from_text(text),
                "message": text[-MESSAGE_LIMIT:],
            })

    @pytest.hookimpl(trylast=True)  # after the conftests have parametrised and marked the items
    def pytest_collection_modifyitems(self, session, config, items):
        """Run mode with a keep list: only the listed instances run (a perturbation runs just the
        instances whose subject uses the patched module, not every parametrisation of the gate)."""
        if self.mode != "run":
            return
        if self.keep is not None:
            deselected = [it for it in items if it.nodeid not in self.keep]
            if deselected:
                items[:] = [it for it in items if it.nodeid in self.keep]
                config.hook.pytest_deselected(items=deselected)
        if self.stop_gate_when_red:
            # node-id order: the first instance failing by assertion is then the one a full run
            # reports (outcomes.classify_gate takes the smallest node id), so the reading is the same
            items.sort(key=lambda it: it.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        """Stop mode: a gate already red by its own assertion has shown what a perturbation
        needs; its remaining instances are skipped, saying so, before their fixtures run."""
        if self.stop_gate_when_red and gate_id(item.nodeid) in self._red_gates:
            pytest.skip(ALREADY_RED)
        if self.stop_when_any_red and self._red_gates:
            pytest.skip(ANOTHER_RED)

    def pytest_collection_finish(self, session):
        if self.mode == "run":  # how many will run: a watcher of the .partial file can show done / total
            self._write_partial({"event": "collected", "count": len(session.items)})
            if self.seed:
                seeding.seed_global_generators()
            if self.worker is not None:  # every worker collects all of them, in the same order
                self._order = [item.nodeid for item in session.items]
            return
        if self.mode != "collect":
            return
        for item in session.items:
            entry = {"nodeid": item.nodeid, "gate": gate_id(item.nodeid), "file": item.nodeid.split("::", 1)[0]}
            entry.update(gate_markers(item))
            self.collected.append(entry)

    # ---- running -------------------------------------------------------
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self._readings.reset()
        self._current = {"failure": None, "skip": None, "readings": None}
        self._write_partial({"event": "start", "nodeid": item.nodeid})
        self._stack.append("item:" + item.nodeid)
        t0 = time.perf_counter()
        trace = LinesExecuted(self.trace_lines) if self.trace_lines else None
        try:
            if trace is None:
                return (yield)
            with trace:
                return (yield)
        finally:
            self._stack.pop()
            if trace is not None:
                self._current["lines_executed"] = trace.to_json()
            self._finish(item, time.perf_counter() - t0)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        rep = yield
        cur = self._current
        if cur is None:
            return rep
        if call.when == "call":  # a red test's reading is the failing assertion's, never an earlier passing one's
            cur["readings"] = (self._readings.of_failure(call.excinfo.value) if rep.failed and call.excinfo
                               else self._readings.current())
        if rep.failed and cur["failure"] is None:
            cur["failure"] = self._describe_failure(item, call, rep)
        elif rep.skipped and cur["skip"] is None and cur["failure"] is None:
            if hasattr(rep, "wasxfail"):
                reason = f"xfail: {rep.wasxfail}".rstrip(": ")
            elif isinstance(rep.longrepr, tuple) and len(rep.longrepr) == 3:
                reason = str(rep.longrepr[2])
            else:
                reason = str(rep.longrepr)
            cur["skip"] = {"phase": call.when, "reason": reason[:MESSAGE_LIMIT]}
        return rep

    def _describe_failure(self, item, call, rep) -> dict:
        excinfo = call.excinfo
        if excinfo is None:
            return {"phase": call.when, "kind": "other", "exc_type": "Failed",
                    "message": without_addresses(str(rep.longrepr))[:MESSAGE_LIMIT], "raised_in": None}
        value = excinfo.value
        frames = [(f.f_code, os.path.abspath(f.f_code.co_filename), lineno) for f, lineno in traceback.walk_tb(excinfo.tb)]
        raised_in = f"{shown_path(frames[-1][1], self.rootdir)}:{frames[-1][2]}" if frames else None
        by_test = (
            call.when == "call"
            and isinstance(value, AssertionError)
            and self._raised_by_test(item, frames)
        )
        t = type(value)
        exc_type = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
        try:
            message = str(value)
        except Exception as e:  # a broken __str__ is still a failure
            message = f"<unprintable {exc_type}: {e!r}>"
        described = {"phase": call.when, "kind": "assertion" if by_test else "other", "exc_type": exc_type,
                     "message": without_addresses(message)[:MESSAGE_LIMIT], "raised_in": raised_in}
        checks = checked_by(value, gate_markers(item)["equations"])
        if checks:  # the failing assertion's checking() block: finer than the parameter's gate_checks
            described["checks"] = checks
        return described

    def _raised_by_test(self, item, frames) -> bool:
        fn = getattr(item, "obj", None)
        try:
            code = inspect.unwrap(fn).__code__ if fn is not None else None
        except Exception:
            code = None
        test_file = os.path.abspath(str(item.path))
        start = next((i for i, (c, _, _) in enumerate(frames) if code is not None and c is code), None)
        if start is None:
            start = next((i for i, (_, f, _) in enumerate(frames) if f == test_file), None)
        if start is None:
            return False
        test_dir = os.path.dirname(test_file) + os.sep
        for _, filename, _ in frames[start:]:
            if filename in self.subject_files:
                return False
            if (
                filename == test_file
                or filename.startswith(test_dir)
                or os.path.basename(filename) == "conftest.py"
                or filename.startswith(self._gates_dir)
                or any(lib in filename for lib in _ASSERTION_LIBRARIES)
            ):
                continue
            return False
        return True

    def _finish(self, item, duration: float) -> None:
        cur = self._current or {"failure": None, "skip": None, "readings": None}
        self._current = None
        readings = cur["readings"] if cur["readings"] is not None else self._readings.current()
        failure, skip = cur["failure"], cur["skip"]
        entry = {
            "nodeid": item.nodeid,
            "gate": gate_id(item.nodeid),
            "outcome": "passed",
            "phase": None,
            "kind": None,
            "exc_type": None,
            "message": None,
            "raised_in": None,
            "skip_reason": None,
            "readings": jsonio.encode_readings(readings),
            "fixtures_read": self._fixtures_of(item),
            "duration_s": round(duration, 6),
        }
        entry.update(gate_markers(item))
        if cur.get("lines_executed") is not None:
            entry["lines_executed"] = cur["lines_executed"]
        if failure is not None:
            entry.update(failure)
            entry["outcome"] = "failed" if failure["phase"] == "call" else "error"
        elif skip is not None:
            entry.update(outcome="skipped", phase=skip["phase"], skip_reason=skip["reason"])
        if entry["outcome"] == "failed" and entry["kind"] == "assertion":
            self._red_gates.add(entry["gate"])
        self.items.append(entry)
        self._write_partial({"event": "item", "item": entry})

    def _write_partial(self, obj: dict) -> None:
        if self._partial is not None:
            self._partial.write(json.dumps(obj, sort_keys=True, allow_nan=False) + "\n")
            self._partial.flush()

    # ---- the end -------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        global _ACTIVE
        if _ACTIVE is self:
            _ACTIVE = None
        if self._partial is not None:
            self._partial.close()
            self._partial = None
        extra = {"subjects": _availability()} if self.mode == "run" else {}
        if self.worker is not None:
            extra.update(worker=self.worker, order=self._order)
        self.write_results(int(exitstatus), **extra)

    def write_results(self, exitstatus: int, **extra) -> None:
        """The final results file (the session's end, or one mutant's end in a batch child)."""
        jsonio.write_json(self.results, {
            "format": FORMAT,
            "mode": self.mode,
            "exitstatus": exitstatus,
            "items": self.items,
            "collected": self.collected,
            "collect_errors": self.collect_errors,
            **extra,
        })

    @property
    def red_gates(self) -> frozenset[str]:
        """Gates with an instance failed by their own assertion so far."""
        return frozenset(self._red_gates)

    def skip_unrun(self, item, reason: str) -> None:
        """Report `item` skipped for `reason` without running it: what the stop modes would report
        for it, at none of the cost of pytest's protocol (a batch fork past its first red)."""
        self._readings.reset()
        self._current = {"failure": None, "skip": {"phase": "setup", "reason": reason}, "readings": None}
        self._finish(item, 0.0)

    def start_over(self, results: str) -> None:
        """A batch child's forked process runs one mutant: it reports to its own results file,
        with nothing of the session before it (batch.py)."""
        if self._partial is not None:
            self._partial.close()
        self.results = os.path.abspath(results)
        self.items, self._red_gates = [], set()
        self._partial = open(self.results + ".partial", "w", encoding="utf-8")


def _read_keep(path: str | None) -> set[str] | None:
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        return set(json.load(f))


def _fixture_key(fixturedef) -> str:
    return f"fixture:{getattr(fixturedef, 'baseid', '')}::{getattr(fixturedef, 'argname', '?')}"


def _exc_type_from_text(text: str) -> str:
    """The exception type named on the last 'E   Type: message' line of a pytest report."""
    for line in reversed(text.splitlines()):
        s = line.strip()
        if s.startswith("E ") and ":" in s:
            name = s[1:].strip().split(":", 1)[0].strip()
            if name.replace(".", "").replace("_", "").isalnum():
                return name
    return "CollectError"
