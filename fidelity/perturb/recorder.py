"""The Recorder: the plugin object a child's pytest runs with results to write (pytest_plugin.py
registers it as "fidelity-perturb-recorder"). In collect mode it lists the collected items; in run mode
it writes one entry per test as it ends (RESULTS.partial) and all of them at the session's end
(RESULTS). pytest_plugin's docstring says what an entry holds."""
from __future__ import annotations

import json
import os
import sys
import time

import pytest

from fidelity.evidence import jsonio
from fidelity.perturb import seeding
from fidelity.perturb.calls_so_far import COLLECT_FIELD, ITEM_FIELD, CallsSoFar
from fidelity.perturb.failure_kind import MESSAGE_LIMIT, describe_failure, exc_type_from_text, skip_reason
from fidelity.perturb.fixture_reads import FixtureReads
from fidelity.perturb.gate_markers import gate_id, gate_markers
from fidelity.perturb.line_trace import LinesExecuted
from fidelity.targets import locate
from fidelity.targets.errors import TargetNotFound

ALREADY_RED = "not run: an earlier instance of this gate already failed by its own assertion"
ANOTHER_RED = "not run: another gate already failed by its own assertion"
FORMAT = 1


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


def target_files(items, rootdir: str | None) -> list[str]:
    """The source files of the modules `items` target, as a child of the project imports them (the files
    whose calls a kept result depends on: target_functions.py)."""
    search = locate.child_search_path(rootdir or os.getcwd())
    files = set()
    for module in {t for item in items for t in gate_markers(item).get("targets") or ()}:
        try:
            files.add(locate.find_source(module, search))
        except TargetNotFound:
            pass  # not found: its instances cannot be keyed, and are never kept
    return sorted(files)


class Recorder(FixtureReads):
    def __init__(self, mode: str, results: str, fixtures: str | None, subject_files: list[str], rootdir: str | None = None,
                 keep: set[str] | None = None, read_back: set[str] | None = None, index_too: bool = False,
                 stop_gate_when_red: bool = False, stop_when_any_red: bool = False,
                 trace_lines: list[str] = (), worker: str | None = None, seed: bool = False,
                 calls: CallsSoFar | None = None):
        self.mode = mode
        self.seed = seed
        self.worker = worker
        self._order: list[str] = []  # a worker's collection order: the merge restores a serial run's order
        self.keep = keep
        self.read_back = read_back
        self.index_too = index_too  # run mode: record the collection as collect mode does too (the gate index)
        self.stop_gate_when_red = stop_gate_when_red or stop_when_any_red
        self.stop_when_any_red = stop_when_any_red
        self.trace_lines = [os.path.abspath(p) for p in trace_lines]
        # started before collection: what it calls is in every record (run), or in what the collection read (collect)
        self.calls = calls if mode in ("run", "collect") else None
        self.collect_calls: dict | None = None  # collect mode: COLLECT_FIELD's value
        self._red_gates: set[str] = set()  # gates with an instance failed by assertion (stop mode)
        self.rootdir = os.path.abspath(rootdir) + os.sep if rootdir else None
        self.results = os.path.abspath(results)
        self.subject_files = {os.path.abspath(p) for p in subject_files}
        self.items: list[dict] = []
        self.collected: list[dict] = []
        self.collect_errors: list[dict] = []
        self._current: dict | None = None
        import fidelity.gates.readings as readings

        self._readings = readings
        self._gates_dir = os.path.dirname(os.path.abspath(readings.__file__)) + os.sep
        self._watch_fixtures(fixtures)
        self._partial = None
        if mode == "run":
            os.makedirs(os.path.dirname(self.results), exist_ok=True)
            self._partial = open(self.results + ".partial", "w", encoding="utf-8")
            self._hear_reads()

    # ---- collection ----------------------------------------------------
    def pytest_collectreport(self, report):
        if report.failed:
            text = str(report.longrepr)
            self.collect_errors.append({
                "nodeid": report.nodeid,
                "exc_type": exc_type_from_text(text),
                "message": text[-MESSAGE_LIMIT:],
            })

    @pytest.hookimpl(trylast=True)  # after the conftests have parametrised and marked the items
    def pytest_collection_modifyitems(self, session, config, items):
        """Run mode with a keep list: only the listed instances run (a perturbation runs just the
        instances whose subject uses the patched module, not every parametrisation of the gate); with a
        read-back list, the listed instances do not run (`check --changed` reads their kept results)."""
        if self.mode != "run":
            return
        if self.index_too:  # every instance collected, before any is deselected
            self.collected = [self._collected(it) for it in items]
        running = [it for it in items if (self.keep is None or it.nodeid in self.keep)
                   and (self.read_back is None or it.nodeid not in self.read_back)]
        if len(running) < len(items):
            runs = set(running)
            deselected = [it for it in items if it not in runs]
            items[:] = running
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
            if self.calls is not None:
                if self.index_too:
                    self._heard_collecting()
                self.calls.narrow(target_files(session.items, self.rootdir))
            if self.seed:
                seeding.seed_global_generators()
            if self.worker is not None:  # every worker collects all of them, in the same order
                self._order = [item.nodeid for item in session.items]
            return
        if self.mode != "collect":
            return
        self.collected = [self._collected(it) for it in session.items]
        if self.calls is not None:
            self._heard_collecting()

    @staticmethod
    def _collected(item) -> dict:
        """A collected instance as the gate index holds it."""
        return {"nodeid": item.nodeid, "gate": gate_id(item.nodeid), "file": item.nodeid.split("::", 1)[0],
                **gate_markers(item)}

    def _heard_collecting(self) -> None:
        """Which files the collection ran, and their functions it called (index_reads.py)."""
        imported = self.calls.files_run()
        self.calls.narrow(imported)
        self.collect_calls = {"imported": imported, "heard": self.calls.seen()}

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
            cur["failure"] = describe_failure(item, call, rep, rootdir=self.rootdir,
                                              subject_files=self.subject_files, gates_dir=self._gates_dir)
        elif rep.skipped and cur["skip"] is None and cur["failure"] is None:
            cur["skip"] = {"phase": call.when, "reason": skip_reason(rep)}
        return rep

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
        if self.calls is not None:
            entry[ITEM_FIELD] = self.calls.seen()
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
        self._stop_hearing()
        if self._partial is not None:
            self._partial.close()
            self._partial = None
        extra = {"subjects": _availability()} if self.mode == "run" else {}
        if self.collect_calls is not None:
            extra[COLLECT_FIELD] = self.collect_calls
        if self.worker is not None:
            extra.update(worker=self.worker, order=self._order)
        self.write_results(int(exitstatus), **extra)

    def write_results(self, exitstatus: int, **extra) -> None:
        """The final results file (the session's end, or one mutant's end in a batch child)."""
        jsonio.write_machine_json(self.results, {
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

    def fork(self) -> int:
        """os.fork() for a runner that forks after collection: the calls heard so far go on being heard."""
        return self.calls.fork() if self.calls is not None else os.fork()

    def start_over(self, results: str) -> None:
        """A batch child's forked process runs one mutant: it reports to its own results file,
        with nothing of the session before it (batch.py)."""
        if self._partial is not None:
            self._partial.close()
        self.results = os.path.abspath(results)
        self.items, self._red_gates = [], set()
        self.collected, self.collect_calls = [], None  # the session's collection: its parent reports it
        self._partial = open(self.results + ".partial", "w", encoding="utf-8")
