"""The perturbation runner: baseline, forced failure, perturbations, green after, evidence.

    result = run(perturbations, repo_root=".", reports_dir="reports")

This module only puts the steps in order; each lives in a module of fidelity.perturb.stages, and a
`stages.state.Run` carries what each step found to the next:
  settings, inputs (1), selection (2), current (3), baseline and forced (4), perturbing and
  batches (5), green_after (6), sources (7), records (8); children: where the children run.

The steps, in order (README, Design: the evidence rules):
 1. check every perturbation dict; find every target's source file without
    importing it; compute every patch (PatchError / TargetNotFound /
    InvalidPerturbation raise here, before any child runs);
 2. the gate index (one cached collect-only child); the gates of a
    perturbation = those covering its target + those it lists or predicts
    (UnknownGate for a listed gate the index does not know); of each gate only
    the instances covering the target run (all of a listed gate's instances
    when none covers it);
 3. with stale_only, perturbations whose evidence is current are not re-run:
    their records are judged by today's spec exactly as `fidelity check`
    judges them (evidence.listed_gates.refusals_of), so a listed gate whose
    current record refuses it is a miss, and a listed gate whose record ran
    before the spec listed it (as a covering gate) runs the perturbation again;
    of those that run, a gate that only covers the target (neither listed nor
    predicted) and whose record is current is not run either: its outcome is
    that record's (reuse_covering=False runs them all; an observation always
    does); a listed gate always runs;
 4. baseline: the selected gates, unpatched, in two children; and the forced
    failure (`forced_red_gate.py`) in a third (started first, while the index
    is collected); any red gate stops the run
    (error_kind "baseline_red"), any gate whose readings differ between the
    two runs is flaky and refused ("flaky"), a forced failure not seen red by
    assertion with its reading stops it too ("forced_failure");
 5. one child per perturbation, `jobs` at a time, each under its timeout, the
    costliest first (the baseline durations of its instances); a gate's
    instances run in node-id order and, once one fails by the gate's own
    assertion, the rest are skipped (the outcome and reading are those a full
    run reports: classify_gate takes the smallest failing node id);
 6. green after: unpatched children over the union of the gates run, `jobs`
    parts of whole gates balanced by their baseline durations, queued behind
    the perturbation children (each child is a fresh process and nothing is
    written to disk, so they may start while the last perturbations run);
 7. the targets' source files, the gate files and every file under fixtures/
    are hashed before step 4 and after step 6: any change on disk fails the run
    loudly ("source_changed") and no evidence is written;
 8. evidence: one record per gate x perturbation (fidelity.evidence), under
    `evidence_dir` (default `<reports_dir>/evidence`).

With observe=True (or `observe(...)`) nothing is expected: a perturbation's
`gates` may be empty, every gate covering its target runs (one naming a
`subject` runs only those it lists, as always), and the result
reports what each gate did (RunResult.observed(): red by assertion, red for
another reason, skipped, green, with readings). Steps 1-7 are the same, so an
observation is trusted exactly as a run is; step 8 is skipped: an observation
writes no evidence (it proves nothing was expected, so it must not count as
acceptance, and it must not replace a record that does). result.ok is then
True when the run completed and everything was green again, whatever went red.
With first_red_only as well, a child stops at the first gate red by its own
assertion and skips the rest (blind-spot discovery asks whether, not which).
Two more options are for observations only (discovery's fast path):
trace_lines: the first baseline child records which lines of the targets each
instance executed (line_trace.py), and a perturbation carrying a `reach`
({"lines": [first, last]} or {"call": line}) runs only the instances that
reached it; none reached it: no child at all (PerturbationResult.unreached);
batched: perturbations run in batch children (batch.py) that collect once and
fork per perturbation, serving it by code swap; one a swap cannot serve runs in
a child of its own, as without the option.

`progress(event)` is called from the calling thread with a dict:
{"event": "collect" | "baseline" | "forced_failure" | "perturbation" |
 "skip" | "green_after" | "evidence" | "error", "message": str, ...};
perturbation events also carry "index", "total", "id", "status" (the
summary), and the message reads "[3/12] P3 ... red by assertion (2 gates)".

Relative `test_paths`, `reports_dir`, `evidence_dir` and `cache_dir` are relative to repo_root.
A perturbation may carry "timeout_s" to override the run's timeout for itself.
Every child is a unit of an executor (executor.py): `executor`, else the one
`executor.using` put in effect, else a LocalExecutor of the run's own. With
warm_start (the default) a local child is forked from a zygote that has
imported torch and pytest once (warm_start.py; the caller may pass one to share
between runs); a perturbation whose target the zygote holds, and every child
when no zygote can start, starts cold. A unit the executor loses (a worker that
died, a lost node) is red for another reason for each of its gates; an
unpatched one (a clean run, a green-after part) says nothing about a gate and
is run again, up to LOST_UNPATCHED_RETRIES times. While units run, progress
events "units" say how many are done, running and queued (unit_tally.py).
`environment` sets (None: unsets)
variables for this run's children only, e.g. the subject variables of a
third-party run, so runs with different subjects may proceed side by side.
"""
from __future__ import annotations

import os
import time
from typing import Iterable

from fidelity.perturb import executor as executor_mod
from fidelity.perturb import warm_start as warm_start_mod
from fidelity.perturb.errors import InvalidPerturbation
from fidelity.perturb.result import RunResult
from fidelity.perturb.stages import baseline, current, forced, green_after, records, selection, sources
from fidelity.perturb.stages.children import LOST_UNPATCHED_RETRIES, Children, executor_for
from fidelity.perturb.stages.inputs import read_inputs, validate
from fidelity.perturb.stages.items import durations
from fidelity.perturb.stages.perturbing import PerturbationChildren
from fidelity.perturb.stages.settings import FIXTURES_DIR, Progress, check_options, resolve_settings, shared_zygote
from fidelity.perturb.stages.state import Run

__all__ = ["run", "observe", "validate", "shared_zygote", "FIXTURES_DIR", "LOST_UNPATCHED_RETRIES", "Progress"]


def run(
    perturbations: Iterable[dict],
    *,
    test_paths: Iterable[str] = ("tests/gates",),
    repo_root: str | os.PathLike = ".",
    reports_dir: str | os.PathLike = "reports",
    jobs: int | None = None,
    timeout_s: float = 120,
    stale_only: bool = False,
    progress: Progress | None = None,
    pythonpath: Iterable[str] = (),
    cache_dir: str | os.PathLike | None = None,
    fixtures_dir: str | os.PathLike = FIXTURES_DIR,
    warm_start: bool = True,
    environment: dict[str, str | None] | None = None,
    zygote: "warm_start_mod.LazyZygote | None" = None,
    executor: "executor_mod.Executor | None" = None,
    evidence_dir: str | os.PathLike | None = None,
    observe: bool = False,
    first_red_only: bool = False,
    set_aside_red_baseline: bool = False,
    trace_lines: bool = False,
    batched: bool = False,
    reuse_covering: bool = True,
) -> RunResult:
    t_start = time.perf_counter()
    check_options(observe=observe, stale_only=stale_only, first_red_only=first_red_only,
                  set_aside_red_baseline=set_aside_red_baseline, trace_lines=trace_lines, batched=batched)
    executor = executor or executor_mod.in_effect()
    if executor is not None and zygote is not None:
        raise InvalidPerturbation("give a zygote (for the local executor) or an executor, not both")
    s = resolve_settings(
        repo_root, test_paths=test_paths, reports_dir=reports_dir, evidence_dir=evidence_dir,
        fixtures_dir=fixtures_dir, cache_dir=cache_dir, pythonpath=pythonpath,
        jobs=jobs or (executor.default_jobs() if executor is not None else None), timeout_s=timeout_s,
        environment=environment, progress=progress, stale_only=stale_only, observe=observe,
        first_red_only=first_red_only, set_aside_red_baseline=set_aside_red_baseline, trace_lines=trace_lines,
        batched=batched, cuda_elsewhere=bool(executor is not None and executor.gpus()),
        reuse_covering=reuse_covering and not observe)
    r = Run(s, *read_inputs(perturbations, s))          # 1. every input error, before any child runs
    with Children(s, *executor_for(s, executor, warm_start, zygote)) as children:
        ran = _run_children(r, children)                # 2.-6. index, baseline, perturbations, green after
    if ran and sources.unchanged(r):                    # 7. nothing on disk moved
        records.write_evidence(r)                       # 8.
    r.result.wall_s = time.perf_counter() - t_start     # the one ending, whether the run stopped or finished
    r.result.compute_ok()
    return r.result


def observe(perturbations: Iterable[dict], **options) -> RunResult:
    """Run `perturbations` expecting nothing: which gates go red, and how (run(observe=True))."""
    return run(perturbations, observe=True, **options)


def _run_children(r: Run, children: Children) -> bool:
    """Steps 2-6, those that run children. False: the run stopped before its perturbations (nothing
    to run, or a forced failure or baseline that cannot be trusted) and steps 7-8 do not apply."""
    # the forced failure needs nothing else: it runs while the gate index is collected
    # (with stale_only it waits until something is known to need running)
    forced_child = None if r.s.stale_only else forced.submit_forced_failure(children)
    if current.without_an_index(r):
        return False
    selection.collect_gate_index(r, children)
    selection.select_gates(r)
    selection.start_results(r)
    current.keep_current_evidence(r)
    if not r.selection.todo:
        r.result.baseline = {"skipped": "nothing to run"}
        return False
    baseline.select(r)
    sources.hash_watched_files(r)
    if not baseline.run_with_forced_failure(r, children, forced_child):
        return False
    if r.s.trace_lines:
        baseline.keep_instances_that_reach(r)
    if not _perturbations_and_green_after(r, children):
        return False
    records.add_baseline_fixtures(r)
    return True


def _perturbations_and_green_after(r: Run, children: Children) -> bool:
    """The perturbation children, the costliest first (their instances' baseline durations), so
    the short ones fill the end; the green-after children queued behind them. Each child is a
    fresh process and nothing is ever written to disk, so a green-after child may start as soon
    as a worker is free. False: green after read otherwise than the clean runs (the run stops)."""
    r.clean.cost = {n: float(e.get("duration_s") or 0.0) for n, e in r.clean.kept.entries().items()}
    r.clean.cost.update(durations(r.clean.runs[0]) if r.clean.runs else {})
    perturbing = PerturbationChildren(r, children)
    perturbing.submit_all()
    after = green_after.submit(r, children)
    perturbing.report_those_without_gates()
    perturbing.wait()
    if after.futures and not green_after.judge(r, after):
        return False
    green_after.green_by_kept_runs(r, after)
    return True
