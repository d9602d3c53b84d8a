"""The perturbation runner: prove each gate can go red by its own assertion.

    from fidelity.perturb import run
    result = run(perturbations, repo_root=".", reports_dir="reports")
    print(result.table()); sys.exit(0 if result.ok else 1)

It reads its targets through fidelity.targets (locate, patching) and writes evidence through
fidelity.evidence (records, outcomes, staleness, the verdict).

Modules, one idea each:
  import_hook    serve the patched source for the target module in a child
  pytest_plugin  what a child's pytest records per test (outcome, kind, readings, fixtures read)
  recorder, gate_markers, failure_kind, fixture_reads, machine_neutral, calls_so_far
                 the plugin's parts: the Recorder; an item's gate markers; a failure's kind and message;
                 which fixture files a test read; paths and addresses as a record shows them; which
                 functions of the targets' files the process called so far (keys by function)
  child          `python -m fidelity.perturb.child JOB.json`
  child_args     the pytest command line a child's job becomes (child and batch children alike)
  batch          a batch child: collect once, fork per mutant (observations with `batched`)
  fork_exit      how a forked child ends (os._exit, whatever its work did)
  launch         start a child, time it out, read what it left
  executor       where a child runs: a unit of work handed to the local executor or another
  unit_tally     how the units stand while they run: done, running, queued
  ray_executor   each unit a Ray task (`pip install 'fidelity[ray]'`)
  ray_task       a unit's trip to a Ray worker and back: paths mapped, files returned
  gate_index     which gates exist and which cover a module (cached)
  outcomes       per-gate Outcome of a child
  clean_runs     how many unpatched runs, and the verdict over them (flaky or not)
  clean_run_inputs, clean_run_store, kept_clean_runs, target_functions
                 clean runs kept under the key of their inputs, the targets' sources by the functions the
                 runs called (also check --changed's kept gate run)
  result         RunResult: its JSON and its table
  runner         `run`: puts the steps in order (baseline, forced failure, perturbations, green after, evidence)
  stages         one module per step of a run, and the run object passed between them

Names are imported lazily so that a child importing `fidelity.perturb.child`
or the plugin loads nothing else.
"""
from __future__ import annotations

_EXPORTS = {
    "run": "fidelity.perturb.runner",
    "observe": "fidelity.perturb.runner",
    "validate": "fidelity.perturb.runner",
    "RunResult": "fidelity.perturb.result",
    "PerturbationResult": "fidelity.perturb.result",
    "GateResult": "fidelity.perturb.result",
    "PerturbError": "fidelity.perturb.errors",
    "InvalidPerturbation": "fidelity.perturb.errors",
    "UnknownGate": "fidelity.perturb.errors",
    "GateCollectionError": "fidelity.perturb.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'fidelity.perturb' has no attribute {name!r}")
