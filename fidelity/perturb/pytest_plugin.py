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
  calls_so_far  with `--fidelity-trace-calls`: {source file of a target: the def lines of its functions
             (function_meaning.py's units) the process had called by the test's end}, a file whose code
             ran unheard left out, or null when nothing can be trusted (calls_so_far.py)
Each item is also appended as a line to RESULTS.partial as soon as it ends
(and a "start" line when it begins), so a child that crashes or is killed
leaves what it did and which test it was in.

(`fidelity check` runs the suite on every core by forking after collection, each fork writing
RESULTS.fork<N>: fidelity/gaterun/forked_workers.py.) Under pytest-xdist (`-n N`) the controller
records nothing; worker W writes RESULTS.W (and RESULTS.W.partial) with its share of the
items and `order`, the collection order every worker shares (by which a reader can merge the
shares back into the order of a serial run).

This module holds the hooks pytest calls on the module itself (options, configure); the rest lives
in modules of one idea each: recorder (the Recorder registered here), gate_markers (an item's gate,
equations, targets), failure_kind (a failure's kind, type, message; a skip's reason), fixture_reads
(the audit hook behind fixtures_read), machine_neutral (addresses and paths a record shows).
"""
from __future__ import annotations

import json
import os

import pytest

from fidelity.perturb.calls_so_far import CallsSoFar
from fidelity.perturb.recorder import Recorder

RESULTS_ENV = "FIDELITY_PERTURB_RESULTS"
MODE_ENV = "FIDELITY_PERTURB_MODE"
FIXTURES_ENV = "FIDELITY_PERTURB_FIXTURES"
SUBJECT_ENV = "FIDELITY_PERTURB_SUBJECT_FILES"  # os.pathsep-separated


def pytest_addoption(parser):
    group = parser.getgroup("fidelity-perturb", "fidelity perturbation runner")
    group.addoption("--fidelity-mode", choices=["collect", "run"], default=None, help="collect or run (default: run)")
    group.addoption("--fidelity-results", default=None, help="write results JSON here")
    group.addoption("--fidelity-fixtures", default=None, help="record files opened under this directory")
    group.addoption("--fidelity-subject-file", action="append", default=[], help="the patched subject's source file")
    group.addoption("--fidelity-keep", default=None,
                    help="a JSON list of node ids: every other collected test is deselected (run mode)")
    group.addoption("--fidelity-read-back", default=None,
                    help="a JSON list of node ids whose results the caller reads back from a kept run: each is "
                         "deselected (run mode; with --fidelity-index-too the results still list it as collected)")
    group.addoption("--fidelity-index-too", action="store_true", default=False,
                    help="record the collection as collect mode does too (every instance collected, and with "
                         "--fidelity-trace-calls what it ran of the harness): the gate index, from a run (run mode)")
    group.addoption("--fidelity-stop-gate-when-red", action="store_true", default=False,
                    help="run a gate's instances in node-id order and skip the rest once one fails by assertion")
    group.addoption("--fidelity-trace-lines", action="append", default=[], metavar="FILE",
                    help="record, per test, the lines of FILE it executed and the functions of FILE it called "
                         "(a mutant of FILE then runs only the tests that reach its lines)")
    group.addoption("--fidelity-trace-calls", action="store_true", default=False,
                    help="record, per test, the functions of its targets' files that its process had called by its "
                         "end (calls_so_far.py: what a kept result depends on, by function)")
    group.addoption("--fidelity-seed", action="store_true", default=False,
                    help="seed the global random generators just before the first test runs (a patched "
                         "child: seeding.py)")
    group.addoption("--fidelity-stop-when-any-red", action="store_true", default=False,
                    help="skip every remaining instance once any gate fails by assertion (blind-spot discovery "
                         "needs one killing gate, not all of them)")


_LISTENING: list[CallsSoFar] = []  # the calls heard from before the conftests, for the recorder made after them


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Before any conftest or test module imports a perturbation target: the patch's finder
    goes ahead of the assertion rewriter pytest has just installed, and with --fidelity-trace-calls
    the calls are heard from here (a module imported before could not be marked: calls_so_far.py)."""
    from fidelity.perturb import import_hook

    import_hook.put_first()
    if getattr(early_config.known_args_namespace, "fidelity_trace_calls", False) and not _LISTENING:
        _LISTENING.append(CallsSoFar())
        _LISTENING[0].start()


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
                        read_back=_read_keep(config.getoption("--fidelity-read-back")),
                        index_too=config.getoption("--fidelity-index-too"),
                        stop_gate_when_red=config.getoption("--fidelity-stop-gate-when-red"),
                        stop_when_any_red=config.getoption("--fidelity-stop-when-any-red"),
                        trace_lines=config.getoption("--fidelity-trace-lines"), worker=worker,
                        seed=config.getoption("--fidelity-seed"),
                        calls=_LISTENING[0] if _LISTENING else None)  # started only with --fidelity-trace-calls
    config.pluginmanager.register(recorder, "fidelity-perturb-recorder")


def worker_id(config) -> str | None:
    """This process's pytest-xdist worker id ("gw0", ...), or None when it is not a worker."""
    return getattr(config, "workerinput", {}).get("workerid")


def worker_results(results: str, worker: str) -> str:
    """Where worker `worker` of a distributed run writes its results (and, beside them, .partial)."""
    return f"{results}.{worker}"


def _read_keep(path: str | None) -> set[str] | None:
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        return set(json.load(f))
