"""The perturbation runner: baseline, forced failure, perturbations, green after, evidence.

    result = run(perturbations, repo_root=".", reports_dir="reports")

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

import concurrent.futures as cf
from dataclasses import dataclass, field
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from fidelity.evidence import jsonio, listed_gates, paths, record, staleness, store
from fidelity.evidence.gate_helpers import GateHelpers
from fidelity.evidence.outcome import Outcome
from fidelity.evidence.verdict import Judged
from fidelity.perturb import gate_index, launch, outcomes
from fidelity.perturb import batch as batch_mod
from fidelity.perturb import clean_runs
from fidelity.perturb import executor as executor_mod
from fidelity.perturb import warm_start as warm_start_mod
from fidelity.perturb.kept_clean_runs import KeptCleanRuns
from fidelity.perturb.unit_tally import UnitTally
from fidelity.perturb.errors import InvalidPerturbation, UnknownGate
from fidelity.perturb.line_trace import reaches
from fidelity.perturb.result import GateResult, PerturbationResult, RunResult
from fidelity.targets import locate, patching
from fidelity.targets.errors import TargetNotFound

FIXTURES_DIR = "fixtures"
LOST_UNPATCHED_RETRIES = 2  # an unpatched unit lost by the executor is run again at most this often

Progress = Callable[[dict], None]


# ---------------------------------------------------------------- inputs

def validate(p: dict) -> dict:
    """A checked, normalised copy of one perturbation dict."""
    if not isinstance(p, dict):
        raise InvalidPerturbation(f"a perturbation must be a mapping, got {type(p).__name__}")
    pid = p.get("id")
    where = f"perturbation {pid!r}" + (f" ({p['file']})" if p.get("file") else "")
    if not isinstance(pid, str) or not pid.strip():
        raise InvalidPerturbation(f"{where}: 'id' must be a non-empty string")
    if not isinstance(p.get("target"), str) or not p["target"]:
        raise InvalidPerturbation(f"{where}: 'target' must be a module name")
    edits = p.get("edits")
    if not isinstance(edits, list) or not edits:
        raise InvalidPerturbation(f"{where}: 'edits' must be a non-empty list")
    gates = p.get("gates") or []
    if not isinstance(gates, list) or not all(isinstance(g, str) for g in gates):
        raise InvalidPerturbation(f"{where}: 'gates' must be a list of gate ids")
    predicted = p.get("predicted") or []
    if not isinstance(predicted, list):
        raise InvalidPerturbation(f"{where}: 'predicted' must be a list")
    preds: dict[str, dict] = {}
    for pr in predicted:
        if not isinstance(pr, dict) or not isinstance(pr.get("gate"), str):
            raise InvalidPerturbation(f"{where}: each prediction needs a 'gate'")
        try:
            reading = jsonio.decode_float(pr.get("reading")) if isinstance(pr.get("reading"), str) else float(pr["reading"])
        except (KeyError, TypeError, ValueError):
            raise InvalidPerturbation(f"{where}: prediction for {pr['gate']} needs a numeric 'reading'") from None
        if pr["gate"] in preds:
            raise InvalidPerturbation(f"{where}: two predictions for {pr['gate']}")
        preds[pr["gate"]] = {"reading": reading, "note": str(pr.get("note") or "")}
    timeout = p.get("timeout_s")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise InvalidPerturbation(f"{where}: 'timeout_s' must be a positive number")
    return {
        "id": pid,
        "title": str(p.get("title") or pid),
        "target": p["target"],
        "edits": edits,
        "gates": sorted(set(gates)),
        "predicted": preds,
        "file": p.get("file"),
        "timeout_s": timeout,
        "subject": p.get("subject"),
        "reach": _reach(p.get("reach"), where),
    }


def _reach(reach, where: str) -> dict | None:
    """What running a perturbation's changed code means, for trace_lines: {"lines": [first, last]}
    (a line in that range executed), {"call": line} (the function whose code starts at that line
    was called), or None (module-level code: every instance reaches it)."""
    if reach is None:
        return None
    ok = isinstance(reach, dict) and (
        (set(reach) == {"lines"} and isinstance(reach["lines"], list) and len(reach["lines"]) == 2
         and all(isinstance(x, int) for x in reach["lines"]))
        or (set(reach) == {"call"} and isinstance(reach["call"], int)))
    if not ok:
        raise InvalidPerturbation(f"{where}: 'reach' must be {{'lines': [first, last]}} or {{'call': line}}")
    return reach




def _abs(path: str | os.PathLike, root: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else root / p


# ---------------------------------------------------------------- the run

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
    _check_options(observe=observe, stale_only=stale_only, first_red_only=first_red_only,
                   set_aside_red_baseline=set_aside_red_baseline, trace_lines=trace_lines, batched=batched)
    executor = executor or executor_mod.in_effect()
    if executor is not None and zygote is not None:
        raise InvalidPerturbation("give a zygote (for the local executor) or an executor, not both")
    s = _settings(
        repo_root, test_paths=test_paths, reports_dir=reports_dir, evidence_dir=evidence_dir,
        fixtures_dir=fixtures_dir, cache_dir=cache_dir, pythonpath=pythonpath,
        jobs=jobs or (executor.default_jobs() if executor is not None else None), timeout_s=timeout_s,
        environment=environment, progress=progress, stale_only=stale_only, observe=observe,
        first_red_only=first_red_only, set_aside_red_baseline=set_aside_red_baseline, trace_lines=trace_lines,
        batched=batched, cuda_elsewhere=bool(executor is not None and executor.gpus()),
        reuse_covering=reuse_covering and not observe)
    r = _Run(s, *_inputs(perturbations, s))            # 1. every input error, before any child runs
    with _Children(s, *_executor(s, executor, warm_start, zygote)) as children:
        ran = _run_children(r, children)                # 2.-6. index, baseline, perturbations, green after
    if ran and _sources_unchanged(r):                   # 7. nothing on disk moved
        _evidence(r)                                    # 8.
    r.result.wall_s = time.perf_counter() - t_start     # the one ending, whether the run stopped or finished
    r.result.compute_ok()
    return r.result


def observe(perturbations: Iterable[dict], **options) -> RunResult:
    """Run `perturbations` expecting nothing: which gates go red, and how (run(observe=True))."""
    return run(perturbations, observe=True, **options)


def _run_children(r: "_Run", children: "_Children") -> bool:
    """Steps 2-6, those that run children. False: the run stopped before its perturbations (nothing
    to run, or a forced failure or baseline that cannot be trusted) and steps 7-8 do not apply."""
    # the forced failure needs nothing else: it runs while the gate index is collected
    # (with stale_only it waits until something is known to need running)
    forced = None if r.s.stale_only else _submit_forced_failure(children)
    if _current_without_an_index(r):
        return False
    _collect_gate_index(r, children)
    _select_gates(r)
    _start_results(r)
    _keep_current_evidence(r)
    if not r.todo:
        r.result.baseline = {"skipped": "nothing to run"}
        return False
    _select_baseline(r)
    _hash_watched_files(r)
    if not _baseline_and_forced_failure(r, children, forced):
        return False
    if r.s.trace_lines:
        _keep_instances_that_reach(r)
    if not _perturbations_and_green_after(r, children):
        return False
    _add_baseline_fixtures(r)
    return True


# ---------------------------------------------------------------- what the steps share

@dataclass(frozen=True)
class _Settings:
    """A run's options, resolved against the repo root: read by every step, changed by none."""
    root: Path
    test_paths: list[str]
    records_root: Path
    fixtures: Path
    cache: Path
    pythonpath: list[str]
    jobs: int
    timeout_s: float
    environment: dict[str, str | None] | None
    base_env: dict                 # the children's environment before `environment` (a zygote's)
    env: dict                      # with `environment` applied: a cold child's
    progress: Progress | None
    stale_only: bool
    observe: bool
    first_red_only: bool
    set_aside_red_baseline: bool
    trace_lines: bool
    batched: bool
    cuda_elsewhere: bool           # the executor's workers have GPUs: CUDA instances skipped here run there
    reuse_covering: bool           # a covering gate with a current record is not run again (step 3)

    def emit(self, event: str, message: str, **extra) -> None:
        if self.progress is not None:
            self.progress(dict(extra, event=event, message=message))


def _check_options(*, observe, stale_only, first_red_only, set_aside_red_baseline, trace_lines, batched) -> None:
    if observe and stale_only:
        raise InvalidPerturbation("an observation runs every perturbation afresh: stale_only does not apply")
    if (first_red_only or set_aside_red_baseline or trace_lines or batched) and not observe:
        raise InvalidPerturbation("first_red_only, set_aside_red_baseline, trace_lines and batched are for "
                                  "observations: acceptance needs every listed gate red, a green baseline, "
                                  "and each perturbation in a child of its own")


def _settings(repo_root, *, test_paths, reports_dir, evidence_dir, fixtures_dir, cache_dir, pythonpath, jobs,
              environment, **flags) -> _Settings:
    root = Path(repo_root).resolve()
    pythonpath = [str(_abs(p, root)) for p in pythonpath]
    jobs = _jobs(jobs)
    base_env = _base_env(root, pythonpath, jobs)
    return _Settings(
        root=root,
        test_paths=[str(t) for t in test_paths],
        records_root=(_abs(evidence_dir, root) if evidence_dir is not None
                      else paths.evidence_root(_abs(reports_dir, root))),
        fixtures=_abs(fixtures_dir, root),
        cache=_abs(cache_dir, root) if cache_dir is not None else gate_index.cache_dir(root),
        pythonpath=pythonpath,
        jobs=jobs,
        environment=environment,
        base_env=base_env,
        env=launch.with_overrides(base_env, environment),
        **flags,
    )


@dataclass
class _Run:
    """What the steps share, filled in as they go (each step says what it sets)."""
    s: _Settings
    perts: list[dict]                                     # validated, in the caller's order
    patches: dict[str, patching.Patch]                    # by perturbation id
    result: RunResult = field(init=False)
    results: dict[str, PerturbationResult] = field(default_factory=dict)  # by id: those in result.perturbations
    index: gate_index.GateIndex | None = None
    gates_of: dict[str, list[str]] = field(default_factory=dict)   # by id: the gates it runs
    instances_of: dict[str, set[str]] = field(default_factory=dict)  # by id: the gates' instances that can see the patch
    todo: list[dict] = field(default_factory=list)       # to run: all, or with stale_only those not current
    kept_covering: dict[str, list[GateResult]] = field(default_factory=dict)  # by id: covering gates known from current records
    records: dict[str, dict] | None = None               # by id, by gate: the evidence records, once read (step 3)
    selected: list[str] = field(default_factory=list)    # the gates of `todo`, run clean in the baseline
    selected_instances: set[str] = field(default_factory=set)
    watched: list[str] = field(default_factory=list)     # files hashed before the baseline and after green after
    helpers: GateHelpers | None = None                   # each gate file's helpers (evidence.gate_helpers)
    hashes_before: dict[str, str | None] = field(default_factory=dict)
    kept: KeptCleanRuns = field(default_factory=KeptCleanRuns.disabled)  # clean runs kept from earlier runs
    kept_runs: dict[str, int] = field(default_factory=dict)   # per selected instance: kept clean runs before this run
    known_green: set[str] = field(default_factory=set)  # instances with CLEAN_RUNS kept: green after is known
    baseline_fixtures: dict[str, set[str]] = field(default_factory=dict)  # per gate: the fixtures its clean runs read
    written: set[str] = field(default_factory=set)      # perturbations whose records are written already
    baseline_runs: list[launch.ChildRun] = field(default_factory=list)  # this run's new clean runs
    baseline_keeps: list[set[str]] = field(default_factory=list)       # the instances each of them ran
    cost: dict[str, float] = field(default_factory=dict)  # seconds per instance in baseline run 1

    def __post_init__(self) -> None:
        self.result = RunResult(observe=self.s.observe)


def _executor(s: _Settings, executor, warm_start: bool, zygote) -> tuple["executor_mod.Executor", bool]:
    """The run's executor, and whether the run owns it (and closes it): the caller's, or a
    LocalExecutor forking from the caller's zygote (shared between runs: their environments differ
    only in `environment`, which each child applies itself), from one of our own, or cold."""
    if executor is not None:
        return executor, False
    if not warm_start:
        return executor_mod.LocalExecutor(None), True
    if zygote is not None:
        return executor_mod.LocalExecutor(zygote), True
    return executor_mod.LocalExecutor(warm_start_mod.LazyZygote(str(s.root), s.base_env), owns_zygote=True), True


class _Children:
    """Where a run's children start: a scratch directory for their job and result files, `jobs`
    worker threads, each handing one unit at a time to the executor, and the tally of those units.
    As a context: on any exception every child is killed; in any case the workers are joined, an
    executor of the run's own closed and the directory removed."""

    def __init__(self, s: _Settings, executor: "executor_mod.Executor", owns_executor: bool):
        self.s = s
        self.executor, self.owns_executor = executor, owns_executor
        self.workdir = tempfile.mkdtemp(prefix="fidelity-perturb-")
        self.place = executor_mod.Place(root=s.root, workdir=self.workdir, pythonpath=tuple(s.pythonpath), env=s.env)
        self.pool = cf.ThreadPoolExecutor(max_workers=s.jobs, thread_name_prefix="fidelity-perturb")
        self.tally = UnitTally(lambda e: s.emit(**e), executor.name)
        self.index: gate_index.GateIndex | None = None  # once collected: which units need a GPU
        self.ending = False  # the run is ending on an exception: a unit lost now is not run again

    def __enter__(self) -> "_Children":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is not None:
                self.ending = True
                self.executor.cancel_all()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)
            if self.owns_executor:
                self.executor.close()
            _rmtree(self.workdir)
        return False

    def job(self, args, patch: patching.Patch | None = None, rootdir: Path | None = None, keep=None) -> dict:
        """What a child does (child.py): run the node ids or paths `args`, only the instances in
        `keep` (None: all), with `patch`'s source served for its module."""
        j = {"mode": "run", "args": list(args), "rootdir": str(rootdir or self.s.root),
             "fixtures_dir": str(self.s.fixtures), "patch": None,
             "keep": sorted(keep) if keep is not None else None, "env": dict(self.s.environment or {}),
             # a perturbation needs each gate red once: the rest of a red gate's instances are skipped
             "stop_gate_when_red": patch is not None,
             # an observation for discovery needs one gate red: everything after it is skipped
             "stop_when_any_red": patch is not None and self.s.first_red_only}
        if patch is not None:
            j["patch"] = {"perturbation": patch.perturbation_id, "module": patch.module,
                          "path": patch.path, "source": patch.patched}
        return j

    def start(self, label: str, job: dict, timeout: float, target: str | None = None,
              queued: bool = False) -> launch.ChildRun:
        """Run one child to its end on the executor (in a worker thread); `queued`: the tally
        counted it when it was submitted."""
        if not queued:
            self.tally.queue()
        unit = executor_mod.Unit(label=label, job=job, timeout_s=timeout, target=target, gpus=self._gpus(job))
        started = threading.Event()

        def on_start() -> None:
            if not started.is_set():
                started.set()
                self.tally.start()

        try:
            child = self.executor.run(unit, self.place, on_start)
            for attempt in range(1, LOST_UNPATCHED_RETRIES + 1):
                if (child.lost is None or job.get("patch") is not None or job.get("mode") == "mutants"
                        or self.ending or launch.stopping()):
                    break
                self.s.emit("lost", f"{label}: {child.status_text}; unpatched, so it says nothing about a "
                                    f"gate: run again ({attempt} of {LOST_UNPATCHED_RETRIES})")
                child = self.executor.run(unit, self.place, on_start)
            return child
        finally:
            self.tally.finish(started=started.is_set())

    def submit(self, label: str, job: dict, timeout: float, target: str | None = None) -> cf.Future:
        self.tally.queue()
        return self.pool.submit(self.start, label, job, timeout, target, True)

    def _gpus(self, job: dict) -> int:
        keep = job.get("keep")
        return 1 if self.index is not None and keep and self.index.on_cuda(keep) else 0


# ---------------------------------------------------------------- 1. inputs, 2. gates, 3. stale_only

def _inputs(perturbations: Iterable[dict], s: _Settings) -> tuple[list[dict], dict[str, patching.Patch]]:
    """The perturbations checked, and each one's patch, computed on its target's source found
    without importing it (InvalidPerturbation, TargetNotFound, PatchError raise here)."""
    perts = [validate(p) for p in perturbations]
    _refuse_colliding_ids(perts)
    search = locate.child_search_path(str(s.root), s.pythonpath)
    return perts, {p["id"]: _patch(p, search) for p in perts}


def _refuse_colliding_ids(perts: list[dict]) -> None:
    seen: dict[str, str] = {}
    for p in perts:
        key = paths.sanitise(p["id"])
        if key in seen:
            raise InvalidPerturbation(f"perturbation ids {seen[key]!r} and {p['id']!r} collide (same evidence directory)")
        seen[key] = p["id"]


def _patch(p: dict, search) -> patching.Patch:
    try:
        path = locate.find_source(p["target"], search)
    except TargetNotFound as e:
        raise TargetNotFound(f"{_named(p)}: {e}") from None
    return patching.make_patch(p["id"], p["target"], path, p["edits"],
                               display_path=locate.module_path(p["target"], path))


def _named(p: dict) -> str:
    """A validated perturbation as error messages name it."""
    return f"perturbation {p['id']}" + (f" ({p['file']})" if p["file"] else "")


def _collect_gate_index(r: _Run, children: _Children) -> None:
    """Sets r.index: one cached collect-only child (gate_index.py)."""
    s = r.s
    s.emit("collect", "collecting the gate index")
    r.index = gate_index.collect(s.test_paths, repo_root=s.root, cache_dir=s.cache, pythonpath=s.pythonpath,
                                 timeout_s=max(s.timeout_s, 300), environment=s.environment,
                                 zygote=children.executor.index_zygote())
    children.index = r.index


def _select_gates(r: _Run) -> None:
    """Sets r.gates_of and r.instances_of: the gates covering a perturbation's target and those it
    lists or predicts (UnknownGate for one the index does not know); of each, the instances
    covering the target (all of a listed gate's when none covers it)."""
    for p in r.perts:
        named = _shown_by(p)
        unknown = sorted(g for g in named if g not in r.index.gates)
        if unknown:
            raise UnknownGate(f"{_named(p)}: unknown gate(s) {unknown}; known gates: {sorted(r.index.gates)}")
        # A perturbation of someone else's implementation (it names a subject) runs only the
        # gates it lists: the package's other red gates are findings about it, not a red baseline.
        covering = set() if p.get("subject") else set(r.index.gates_for_target(p["target"]))
        r.gates_of[p["id"]] = sorted(covering | named)
        r.instances_of[p["id"]] = {n for g in r.gates_of[p["id"]]
                                   for n in r.index.instances_covering(g, p["target"], r.s.cuda_elsewhere)}


def _start_results(r: _Run) -> None:
    """Sets r.results and r.result.perturbations: every perturbation "not_run" until it is."""
    for p in r.perts:
        patch = r.patches[p["id"]]
        r.results[p["id"]] = PerturbationResult(
            id=p["id"], title=p["title"], target=p["target"], target_file=patch.display_path,
            spec_file=p["file"], diff=patch.diff, gates=r.gates_of[p["id"]], listed=p["gates"], status="not_run",
            observe=r.s.observe,
        )
    r.result.perturbations = [r.results[p["id"]] for p in r.perts]


def _keep_current_evidence(r: _Run) -> None:
    """Sets r.todo: every perturbation, or with stale_only those whose evidence is not current
    (the others are filled from their records); then, with reuse_covering, r.kept_covering."""
    if not r.s.stale_only and not r.s.reuse_covering:
        r.todo = list(r.perts)
        return
    by_perturbation, now = _records_by_perturbation(r), staleness.ProjectNow(r.s.root)
    r.todo = [p for p in r.perts
              if not (r.s.stale_only and _kept(r, p, by_perturbation.get(p["id"], {}), r.gates_of[p["id"]], now))]
    if r.s.reuse_covering:
        _keep_current_covering(r, by_perturbation, now)


def _current_without_an_index(r: _Run) -> bool:
    """stale_only, when every perturbation names a subject (it runs only the gates it names, so the gate
    index adds nothing to which records it needs) and each of those gates has a current record: every
    perturbation is filled from its records and nothing runs, not even the collect-only child that
    imports the subject's package. A named gate without a current record (new, renamed, misspelled)
    sends the run down the usual path, where the index judges it."""
    if not r.s.stale_only or not r.perts or not all(p.get("subject") for p in r.perts):
        return False
    by_perturbation, now = _records_by_perturbation(r), staleness.ProjectNow(r.s.root)
    named = {p["id"]: sorted(_shown_by(p)) for p in r.perts}
    if not all(_all_current(by_perturbation.get(p["id"], {}), named[p["id"]], r.s.root, p, now)
               and _judged_by_todays_spec(p, by_perturbation[p["id"]], r.s.root, now) is not None for p in r.perts):
        return False
    r.gates_of.update(named)
    _start_results(r)
    for p in r.perts:
        _kept(r, p, by_perturbation[p["id"]], named[p["id"]], now)
    r.result.baseline = {"skipped": "nothing to run"}
    return True


def _records_by_perturbation(r: _Run) -> dict[str, dict]:
    """perturbation id -> gate -> its record, for the run's perturbations (read once a run)."""
    if r.records is None:
        r.records = {}
        for rec in store.load_all(r.s.records_root, [p["id"] for p in r.perts]):
            r.records.setdefault(rec.perturbation, {})[rec.gate] = rec
    return r.records


def _shown_by(p: dict) -> set[str]:
    """The gates a perturbation lists or predicts: what it shows, so they always run."""
    return set(p["gates"]) | set(p["predicted"])


def _all_current(mine: dict, gates: list[str], root: Path, p: dict, now: staleness.ProjectNow) -> bool:
    """Every one of `gates` has a current record among `mine` (and there is at least one)."""
    return bool(gates) and all(g in mine and staleness.is_current(mine[g], root, p, now) for g in gates)


def _kept(r: _Run, p: dict, mine: dict, gates: list[str], now: staleness.ProjectNow) -> bool:
    """stale_only: fills p's result from its records and says so (True) when every one of `gates` has a
    current record and today's spec needs no new run to judge them; the kept records are then judged by
    today's spec as check judges them (listed_gates), so a listed gate they refuse makes p RED."""
    if not _all_current(mine, gates, r.s.root, p, now):
        return False
    refused = _judged_by_todays_spec(p, mine, r.s.root, now)
    if refused is None:
        return False
    _from_records(r.results[p["id"]], [mine[g] for g in gates], refused)
    r.s.emit("skip", f"{p['id']} ... evidence current, not re-run"
             + (f"; RED by today's spec: {'; '.join(x.sentence() for x in refused)}" if refused else ""), id=p["id"])
    return True


def _judged_by_todays_spec(p: dict, mine: dict, root: Path, now: staleness.ProjectNow) -> list | None:
    """What check refuses of p's records (listed_gates.refusals_of: one rule for both); None when one of
    them needs p run again (no current record for a listed gate, or one that ran before the spec listed it)."""
    judged = {g: Judged(rec, tuple(staleness.staleness(rec, root, p, now))) for g, rec in mine.items()}
    refused = listed_gates.refusals_of(p["id"], p["gates"], p["predicted"], judged, None)
    return None if any(not x.evidence_current for x in refused) else refused


def _keep_current_covering(r: _Run, by_perturbation: dict[str, dict], now: staleness.ProjectNow) -> None:
    """Sets r.kept_covering, and takes those gates out of what each perturbation runs. A gate the
    perturbation runs only because it covers the target (neither listed nor predicted) is not run
    again while its record is current (the same rule --stale and `check` apply: the gate file, its
    helpers, the target's source, the fixtures it read and the edits hash as recorded), says it was
    green again, has its clean runs, and saw a verdict, not a crash or a timeout that may belong to
    the machine. The listed and predicted gates always run: they are what the perturbation shows."""
    kept_total = ran_total = 0
    for p in r.todo:
        named = _shown_by(p)
        if not named:
            continue  # nothing would run: an unlisted perturbation keeps all its gates
        mine = by_perturbation.get(p["id"], {})
        known = sorted(g for g in r.gates_of[p["id"]] if g not in named and g in mine
                       and _reusable_covering(mine[g], r.s.root, p, now))
        if not known:
            ran_total += len(r.gates_of[p["id"]])
            continue
        r.kept_covering[p["id"]] = [_result_from_record(mine[g], kept=True) for g in known]
        r.gates_of[p["id"]] = [g for g in r.gates_of[p["id"]] if g not in known]
        r.instances_of[p["id"]] = {n for n in r.instances_of[p["id"]] if _gate_of(n) not in known}
        r.results[p["id"]].gates = r.gates_of[p["id"]]
        kept_total += len(known)
        ran_total += len(r.gates_of[p["id"]])
    if kept_total:
        r.s.emit("skip", f"covering gates: {kept_total} known from current records (inputs unchanged), not run "
                         f"again; {ran_total} gates run (--rerun-covering runs them all)")


def _reusable_covering(rec, root: Path, p: dict, now: staleness.ProjectNow) -> bool:
    return (not rec.listed and rec.predicted is None and rec.green_after is True
            and (rec.clean_runs or 0) >= record.CLEAN_RUNS
            and rec.outcome in (Outcome.RED_BY_ASSERTION, Outcome.SURVIVED, Outcome.SKIPPED)
            and staleness.is_current(rec, root, p, now))


# ---------------------------------------------------------------- 4. baseline and forced failure

def _select_baseline(r: _Run) -> None:
    """Sets r.selected and r.selected_instances: what the clean runs run; r.kept and r.kept_runs:
    the clean runs kept from earlier runs under each instance's key now (none for an observation)."""
    r.selected = sorted({g for p in r.todo for g in r.gates_of[p["id"]]})
    r.selected_instances = set().union(*(r.instances_of[p["id"]] for p in r.todo))
    if not r.s.observe:
        r.kept = KeptCleanRuns.for_run(r.s.records_root, r.s.root, r.s.test_paths, r.s.fixtures, r.index, r.s.env,
                                       r.selected_instances)
    r.kept_runs = {n: r.kept.kept(n) for n in r.selected_instances}
    r.known_green = {n for n, k in r.kept_runs.items() if k >= clean_runs.CLEAN_RUNS}


def _hash_watched_files(r: _Run) -> None:
    """Sets r.watched and r.hashes_before (step 7 compares them after green after)."""
    r.helpers = GateHelpers(r.s.root, locate.child_search_path(str(r.s.root)))
    r.watched = _watched_files(r.patches, r.todo, r.index, r.selected, r.s.root, r.s.fixtures, r.helpers)
    r.hashes_before = {f: jsonio.sha256_file(f) for f in r.watched}
    for p in r.todo:  # the text each patch was computed on is the "before" of its target
        r.hashes_before[r.patches[p["id"]].path] = r.patches[p["id"]].original_sha256


def _submit_forced_failure(children: _Children) -> cf.Future:
    """forced_red_gate.py, in a child: a gate that must be seen red by its own assertion with its
    reading, or no red of this run can be trusted."""
    gate = _forced_red_gate(children.s)
    return children.submit("forced-failure", children.job([str(gate)], rootdir=gate.parent.parent.parent),
                           children.s.timeout_s)


def _forced_red_gate(s: _Settings) -> Path:
    """The forced_red_gate.py of the `fidelity` a child imports: a project that holds its own copy of the
    package (this repository, checked by a fidelity installed elsewhere) has its children import that
    copy, and pytest cannot collect another file under the same module name."""
    return Path(locate.find_source("fidelity.perturb.forced_red_gate",
                                   locate.child_search_path(str(s.root), s.pythonpath)))


def _baseline_and_forced_failure(r: _Run, children: _Children, forced: cf.Future | None) -> bool:
    """Sets r.baseline_runs, r.result.forced_failure and r.result.baseline: the clean runs and the
    forced failure (`forced`, or started here), judged. False: the run stops (r.result.error)."""
    s = r.s
    n_runs = clean_runs.OBSERVATION_RUNS if s.observe else clean_runs.CLEAN_RUNS
    kept = sum(1 for n in r.selected_instances if r.kept_runs[n] >= n_runs)
    s.emit("baseline", f"baseline: {len(r.selected)} gates, unpatched, {n_runs} runs"
                       + (f" ({n_runs} kept for {kept} of {len(r.selected_instances)} instances, whose inputs are "
                          "unchanged: the rest are run)" if kept else "") + "; forced failure")
    if forced is None:
        forced = _submit_forced_failure(children)
    run_futures = _submit_clean_runs(r, children, n_runs)
    forced_child, r.baseline_runs = forced.result(), [f.result() for f in run_futures]

    r.result.forced_failure = _check_forced(forced_child)
    s.emit("forced_failure", "forced failure: " + ("seen red by assertion" if r.result.forced_failure["seen_red"]
                                                   else "NOT seen red: " + r.result.forced_failure["detail"]))
    r.result.baseline = _check_baseline(r, r.baseline_runs, r.baseline_keeps)
    s.emit("baseline", "baseline: " + (f"green in all {n_runs} runs, readings identical" if r.result.baseline["ok"]
                                       else "FAILED"))
    if not _baseline_trusted(r):
        return False
    r.baseline_fixtures = _baseline_fixtures(r)
    return True


def _submit_clean_runs(r: _Run, children: _Children, n_runs: int) -> list[cf.Future]:
    """Clean run k runs the instances that still need k or more (n_runs less those kept under
    their key), so each instance has n_runs in all; when none needs any, no child runs."""
    to_go = {n: max(0, n_runs - r.kept_runs[n]) for n in r.selected_instances}
    r.baseline_keeps = [{n for n, left in to_go.items() if left >= k} for k in range(1, max(to_go.values(), default=0) + 1)]
    futures = []
    for k, keep in enumerate(r.baseline_keeps, start=1):
        job = children.job(sorted({_gate_of(n) for n in keep}), keep=keep)
        if k == 1 and r.s.trace_lines:  # the first baseline also says which instance runs which lines of the targets
            job["trace_lines"] = sorted({r.patches[p["id"]].path for p in r.todo})
        futures.append(children.submit(f"baseline-{k}", job, r.s.timeout_s))
    return futures


def _baseline_trusted(r: _Run) -> bool:
    """Whether the run may go on after its baseline; if not, why (r.result.error)."""
    forced, base = r.result.forced_failure, r.result.baseline
    if not forced["seen_red"]:
        _stop(r, "forced_failure", "the forced failure was not seen red by assertion, so red cannot be trusted: "
              + forced["detail"])
        return False
    if base["red"] and r.s.set_aside_red_baseline and not base["flaky"]:
        _set_aside_red_gates(r)
        return True
    r.kept.forget({x["gate"] for x in base["red"]} | set(base["flaky"]))  # refused: their kept runs go
    if base["red"]:
        reds = "; ".join(f"{x['gate']} ({x['run']}): {x['outcome']}: {x['detail']}" for x in base["red"])
        _stop(r, "baseline_red", f"baseline red: gates fail with no perturbation applied: {reds}")
        return False
    if base["flaky"]:
        fl = "; ".join(clean_runs.describe(g, d, base["labels"]) for g, d in sorted(base["flaky"].items()))
        _stop(r, "flaky", f"flaky gates refused (red in some unpatched runs, or readings that differ between "
                          f"them): {fl}")
        return False
    for child in r.baseline_runs:  # proved: kept now, so a run stopped later need not prove them again
        r.kept.add(child, lambda it: _fixtures_of(it, r.s.root))
    r.kept.save()
    return True


def _set_aside_red_gates(r: _Run) -> None:
    # someone else's package already fails these gates unperturbed (its findings): a mutant
    # cannot be told by them, so they are left out of this observation, and said so
    aside = sorted({x["gate"] for x in r.result.baseline["red"]})
    r.result.baseline["set_aside"] = aside
    r.s.emit("baseline", f"baseline: {len(aside)} gates already red unperturbed, set aside: {', '.join(aside)}")
    for p in r.todo:
        r.gates_of[p["id"]] = [g for g in r.gates_of[p["id"]] if g not in aside]
        r.instances_of[p["id"]] = {n for n in r.instances_of[p["id"]] if _gate_of(n) not in aside}
        r.results[p["id"]].gates = r.gates_of[p["id"]]
    r.selected = [g for g in r.selected if g not in aside]


def _keep_instances_that_reach(r: _Run) -> None:
    """trace_lines: a perturbation runs only the instances that reached its changed code in
    baseline run 1; none did: it is unreached and runs no child."""
    executed = {it["nodeid"]: it.get("lines_executed") or {} for it in r.baseline_runs[0].items}
    for p in r.todo:
        if p["reach"] is None:
            continue
        path = r.patches[p["id"]].path
        keep = {n for n in r.instances_of[p["id"]] if reaches(executed.get(n, {}).get(path), p["reach"])}
        r.instances_of[p["id"]] = keep
        r.gates_of[p["id"]] = sorted({_gate_of(n) for n in keep})
        r.results[p["id"]].gates = r.gates_of[p["id"]]
        r.results[p["id"]].unreached = not keep


def _stop(r: _Run, kind: str, message: str) -> None:
    """The run stops here: no further step runs, and no evidence is written."""
    r.result.error_kind, r.result.error = kind, message
    r.s.emit("error", message)


# ---------------------------------------------------------------- 5. perturbations, 6. green after

def _perturbations_and_green_after(r: _Run, children: _Children) -> bool:
    """The perturbation children, the costliest first (their instances' baseline durations), so
    the short ones fill the end; the green-after children queued behind them. Each child is a
    fresh process and nothing is ever written to disk, so a green-after child may start as soon
    as a worker is free. False: green after read otherwise than the clean runs (the run stops)."""
    r.cost = {n: float(e.get("duration_s") or 0.0) for n, e in r.kept.entries().items()}
    r.cost.update(_durations(r.baseline_runs[0]) if r.baseline_runs else {})
    perturbing = _PerturbationChildren(r, children)
    perturbing.submit_all()
    green_after = _submit_green_after(r, children)
    perturbing.report_those_without_gates()
    perturbing.wait()
    if green_after.futures and not _judge_green_after(r, green_after):
        return False
    _green_by_kept_runs(r, green_after)
    return True


class _PerturbationChildren:
    """Step 5: a child per perturbation (with `batched`, a batch child per share of them); each
    judged as it ends and reported "[k/total] id ... summary"."""

    def __init__(self, r: _Run, children: _Children):
        self.r, self.children = r, children
        self.futures: dict[cf.Future, dict | list[dict]] = {}  # a perturbation's child, or a batch's
        self.done = 0
        self.total = len(r.todo)

    def submit_all(self) -> None:
        r = self.r
        with_gates = sorted((p for p in r.todo if r.results[p["id"]].gates),
                            key=lambda p: -sum(r.cost.get(n, 0.0) for n in r.instances_of[p["id"]]))
        if r.s.batched:
            for part in _batches(with_gates, r.s.jobs):
                self.children.tally.queue()
                self.futures[self.children.pool.submit(_run_batch, r, self.children, part)] = part
        else:
            for p in with_gates:
                self.submit_one(p)

    def submit_one(self, p: dict) -> None:
        r = self.r
        job = self.children.job(r.results[p["id"]].gates, r.patches[p["id"]], keep=r.instances_of[p["id"]])
        fut = self.children.submit(f"perturbation-{p['id']}", job, p["timeout_s"] or r.s.timeout_s, p["target"])
        self.futures[fut] = p

    def report_those_without_gates(self) -> None:
        for p in self.r.todo:  # nothing can go red
            if not self.r.results[p["id"]].gates:
                self.r.results[p["id"]].status = "ran"
                self._report(p)

    def wait(self) -> None:
        while self.futures:
            fut = next(cf.as_completed(self.futures))
            what = self.futures.pop(fut)
            if isinstance(what, dict):
                self._finish(what, fut.result())
                continue
            for p, child in fut.result():  # a batch: what each fork left, or None to run it alone
                if child is None:
                    self.submit_one(p)
                else:
                    self._finish(p, child)

    def _finish(self, p: dict, child: launch.ChildRun) -> None:
        r = self.r
        pr = r.results[p["id"]]
        pr.status = "ran"
        pr.child = child.to_json()
        counts = _counts(r.instances_of[p["id"]])
        ran = [_gate_result(g, r.index, child, p, r.s.root, counts[g]) for g in pr.gates]
        pr.outcomes = sorted(ran + r.kept_covering.get(p["id"], []), key=lambda o: o.gate)
        _write_when_known(r, p)
        self._report(p)

    def _report(self, p: dict) -> None:
        self.done += 1
        summary = self.r.results[p["id"]].summary()
        self.r.s.emit("perturbation", f"[{self.done}/{self.total}] {p['id']} ... {summary}",
                      index=self.done, total=self.total, id=p["id"], status=summary)


def _run_batch(r: _Run, children: _Children, part: list[dict]) -> list[tuple[dict, launch.ChildRun | None]]:
    """One batch child for `part` (batch.py), in a worker thread: [(perturbation, ChildRun or None)];
    None for one its forks could not serve by code swap, or left no results (it runs alone then)."""
    mutants = [_mutant(r, children, p) for p in part]
    os.makedirs(os.path.join(children.workdir, "batch-results"), exist_ok=True)
    j_keep = set().union(*(r.instances_of[p["id"]] for p in part))
    j = dict(children.job(sorted({g for p in part for g in r.results[p["id"]].gates}), keep=j_keep),
             mode="mutants", mutants=mutants, stop_gate_when_red=True, stop_when_any_red=r.s.first_red_only,
             instance_seconds={n: r.cost.get(n, 0.0) for n in j_keep})
    batch_child = children.start(f"batch-{part[0]['id']}", j, sum(m["timeout_s"] for m in mutants) + r.s.timeout_s,
                                 queued=True)
    out = [(p, _batch_fork(p, m, batch_child)) for p, m in zip(part, mutants)]
    alone = [p["id"] for p, c in out if c is None]
    if alone:
        why = (f"the batch child ended {batch_child.status_text}: {batch_child.output_tail[-1500:]}"
               if batch_child.status != "ok" or len(alone) == len(out) else "code swap cannot serve them")
        r.s.emit("batch", f"{len(alone)} of {len(out)} run alone ({why}): {', '.join(alone[:5])}"
                          + (" ..." if len(alone) > 5 else ""))
    return out


def _mutant(r: _Run, children: _Children, p: dict) -> dict:
    """A perturbation as a batch child serves it (batch.py)."""
    patch = r.patches[p["id"]]
    return {"id": p["id"], "module": p["target"], "path": patch.path, "source": patch.patched,
            "keep": sorted(r.instances_of[p["id"]]), "timeout_s": p["timeout_s"] or r.s.timeout_s,
            "results": os.path.join(children.workdir, "batch-results", paths.sanitise(p["id"]) + ".json")}


def _batch_fork(p: dict, mutant: dict, batch_child: launch.ChildRun) -> launch.ChildRun | None:
    """What the fork serving `p` left, as a child of its own would have; None: it must run alone."""
    status = batch_mod.read_status(mutant["results"])
    child = None if status is None else launch.read_child(
        f"perturbation-{p['id']}", mutant["results"], returncode=status["returncode"],
        timed_out=status["timed_out"], wall_s=status["wall_s"], output_tail=batch_child.output_tail,
        start="batch")
    if child is not None and (child.results or {}).get(batch_mod.SWAP_IMPOSSIBLE):
        return None
    return child


@dataclass(frozen=True)
class _GreenAfter:
    """Step 6 under way: unpatched children over every gate a perturbation ran, in parts of whole gates,
    but for the instances whose green is already known (`kept`, see _submit_green_after)."""
    gates: list[str]
    instances: set[str]
    parts: list[set[str]]
    futures: list[cf.Future]
    kept: set[str]


def _submit_green_after(r: _Run, children: _Children) -> _GreenAfter:
    """An instance with CLEAN_RUNS clean runs kept under its key from earlier runs is not run again:
    unpatched, with the same inputs (step 7 hashes them after), it was green every time, so the
    run would repeat a known answer. The others (those whose clean runs this run made) are run."""
    every = set().union(*(r.instances_of[p["id"]] for p in r.todo if r.results[p["id"]].gates))
    kept = every & r.known_green
    instances = every - kept
    gates = sorted({_gate_of(n) for n in instances})
    parts = _balanced_parts(instances, r.cost, r.s.jobs)
    futures = [children.submit(f"green-after-{i + 1}", children.job(sorted({_gate_of(n) for n in part}), keep=part),
                               r.s.timeout_s)
               for i, part in enumerate(parts)]
    return _GreenAfter(gates, instances, parts, futures, kept)


def _green_by_kept_runs(r: _Run, after: _GreenAfter) -> None:
    """Gates whose every instance ran no green-after child (all kept): green after, as the kept
    clean runs of the same inputs say; each perturbation's restored over all its gates."""
    kept_gates = {_gate_of(n) for n in after.kept} - set(after.gates)
    for g in kept_gates:
        for o in _outcomes_of_gate(r, g):
            o.green_after = True
    for p in r.todo:
        pr = r.results[p["id"]]
        if pr.outcomes:
            pr.restored = all(o.green_after for o in pr.outcomes)
    if kept_gates:
        r.result.green_after = dict(r.result.green_after or {"gates": [], "not_green": [], "children": []},
                                    kept=sorted(kept_gates))
        r.s.emit("green_after", f"green after: {len(kept_gates)} gates known green from their kept clean runs "
                                "(inputs unchanged), not run again")


def _judge_green_after(r: _Run, after: _GreenAfter) -> bool:
    """Sets each outcome's green_after (and the fixtures its gate read), each perturbation's
    restored, and r.result.green_after. Green after is one more clean run of what it ran: a reading
    that differs from the clean runs' makes its gate flaky and stops the run (False)."""
    r.s.emit("green_after", f"green after: {len(after.gates)} gates, unpatched, in {len(after.futures)} children")
    after_children = [f.result() for f in after.futures]
    moved = [d for c in after_children for d in r.kept.differing(c)]
    if moved:
        r.kept.forget({_gate_of(d["nodeid"]) for d in moved})
        r.result.green_after = {"gates": after.gates, "moved": moved, "children": [c.to_json() for c in after_children]}
        _stop(r, "flaky", "flaky gates refused (readings that differ between unpatched runs): " + "; ".join(
            f"{_gate_of(d['nodeid'])}: {d['nodeid']} read {d['first']} in the clean runs and {d['then']} in green after"
            for d in moved))
        return False
    child_of = {_gate_of(n): c for part, c in zip(after.parts, after_children) for n in part}
    green = {}
    counts = _counts(after.instances)
    for g in after.gates:
        c = outcomes.classify_gate(g, r.index.file_of(g), child_of[g], counts[g])
        green[g] = c["outcome"].green
        for o in _outcomes_of_gate(r, g):
            o.green_after = green[g]
            o.fixtures_read = sorted(set(o.fixtures_read) | {paths.rel_to_root(f, r.s.root) for f in c["fixtures_read"]})
    r.result.green_after = {"gates": after.gates, "not_green": sorted(g for g, ok in green.items() if not ok),
                            "children": [c.to_json() for c in after_children]}
    r.s.emit("green_after", "green after: " + ("all green" if all(green.values()) else
                                               "NOT green: " + ", ".join(r.result.green_after["not_green"])))
    not_green = set(r.result.green_after["not_green"])
    for c in after_children:
        r.kept.add(c, lambda it: _fixtures_of(it, r.s.root))
    r.kept.forget(not_green)  # red unpatched once: its clean runs start again
    return True


def _outcomes_of_gate(r: _Run, gate: str) -> list[GateResult]:
    return [o for p in r.todo for o in r.results[p["id"]].outcomes if o.gate == gate]


def _baseline_fixtures(r: _Run) -> dict[str, set[str]]:
    """Per gate, the fixture files its clean runs read: this run's, and the kept ones' as their
    first run recorded them."""
    base_fx: dict[str, set] = {}
    for child in r.baseline_runs:
        for it in child.items:
            base_fx.setdefault(it["gate"], set()).update(_fixtures_of(it, r.s.root))
    for n, e in r.kept.entries().items():
        base_fx.setdefault(_gate_of(n), set()).update(e.get("fixtures_read") or ())
    return base_fx


def _add_baseline_fixtures(r: _Run) -> None:
    """Fixtures read in the baseline belong to the gate too."""
    for p in r.todo:
        _add_baseline_fixtures_of(r, p)


def _add_baseline_fixtures_of(r: _Run, p: dict) -> None:
    for o in r.results[p["id"]].outcomes:
        o.fixtures_read = sorted(set(o.fixtures_read) | r.baseline_fixtures.get(o.gate, set()))


# ---------------------------------------------------------------- 7. sources, 8. evidence

def _sources_unchanged(r: _Run) -> bool:
    """Sets r.result.sources; False (the run stops, no evidence) when a watched file, or a fixture
    read but not hashed before, differs from what it was before the baseline."""
    root = r.s.root
    hashes_after = {f: jsonio.sha256_file(f) for f in r.watched}
    for p in r.todo:  # every file under fixtures/ was hashed before: one read but not hashed appeared during the run
        for o in r.results[p["id"]].outcomes:
            for fx in o.fixtures_read:
                full = str(paths.resolve(fx, root))
                if full not in r.hashes_before:
                    r.hashes_before[full], hashes_after[full] = None, jsonio.sha256_file(full)
    changed = sorted(paths.rel_to_root(f, root) for f in r.hashes_before if r.hashes_before[f] != hashes_after.get(f))
    r.result.sources = {"watched": len(r.hashes_before), "changed": changed}
    if changed:
        written = f" (the records of {len(r.written)} perturbations were written before)" if r.written else ""
        _stop(r, "source_changed", "files changed on disk during the run (a gate, a target or a fixture); "
                                   f"no evidence written{written}: {changed}")
        return False
    return True


def _write_when_known(r: _Run, p: dict) -> None:
    """Step 8 for one perturbation as soon as its child ends, when nothing is left to learn: every
    instance it ran has CLEAN_RUNS kept (its green after is known, _green_by_kept_runs) and no file
    it names has changed since the baseline (the check of step 7, for its files). A run stopped
    later keeps these records; the others are written at the end, as before."""
    pr = r.results[p["id"]]
    if r.s.observe or not pr.outcomes or not r.instances_of[p["id"]] <= r.known_green:
        return
    _add_baseline_fixtures_of(r, p)
    files = {str(paths.resolve(f, r.s.root)) for o in pr.outcomes for f in o.fixtures_read} | set(r.watched)
    if any(r.hashes_before.get(f) != jsonio.sha256_file(f) for f in files):
        return  # step 7 stops the run and says which
    for o in pr.outcomes:
        o.green_after = True
    pr.restored = True
    _write_records(r, p, record.versions(), record.utc_now())
    r.written.add(p["id"])


def _evidence(r: _Run) -> None:
    if r.s.observe:  # an observation expected nothing, so it proves nothing: no evidence (module docstring)
        r.s.emit("evidence", "observation: no evidence written")
    else:
        _write_evidence(r)


def _write_evidence(r: _Run) -> None:
    """One record per gate run, and no records left of gates a perturbation no longer runs."""
    vers = record.versions()
    now = record.utc_now()
    r.kept.save()
    for p in r.todo:
        if p["id"] not in r.written:
            _write_records(r, p, vers, now)
    kept = sum(len(k) for k in r.kept_covering.values())
    r.s.emit("evidence", f"evidence: {len(r.result.evidence)} records under "
                         f"{paths.rel_to_root(r.s.records_root, r.s.root)}"
                         + (f"; {kept} current records of covering gates left as they were" if kept else ""))


def _write_records(r: _Run, p: dict, vers: dict, now: str) -> None:
    """The records of one perturbation, and none left of gates it no longer runs."""
    root, records_root = r.s.root, r.s.records_root
    pr = r.results[p["id"]]
    patch = r.patches[p["id"]]
    edir = paths.record_dir(records_root, p["id"])
    written = set()
    for o in pr.outcomes:
        if o.kept:  # its current record stays as it is
            written.add(paths.record_path(records_root, p["id"], o.gate).name)
            continue
        # counted up to CLEAN_RUNS: a record that says "enough" does not change with every run
        runs = min(r.result.baseline["clean_runs_of"].get(o.gate, 0), record.CLEAN_RUNS)
        rec = _record(p, pr, patch, o, root, r.hashes_before, vers, now, runs, r.helpers.of(o.gate_file))
        path = store.write_record(records_root, rec)
        written.add(path.name)
        r.result.evidence.append(paths.rel_to_root(path, root))
    if edir.is_dir():  # records of gates this perturbation no longer runs
        for old in edir.glob("*.json"):
            if old.name not in written:
                old.unlink()


# ---------------------------------------------------------------- helpers

def _jobs(jobs: int | None) -> int:
    return max(1, int(jobs or os.cpu_count() or 1))


def _base_env(root: Path, pythonpath: list[str], jobs: int) -> dict:
    """The children's environment before a run's `environment`: `jobs` children at once."""
    return launch.child_env(str(root), pythonpath, processes=jobs)


def shared_zygote(repo_root: str | os.PathLike = ".", jobs: int | None = None,
                  pythonpath: Iterable[str] = ()) -> warm_start_mod.LazyZygote:
    """A zygote several runs with these settings may share (pass it as `zygote`; close it after)."""
    root = Path(repo_root).resolve()
    return warm_start_mod.LazyZygote(str(root), _base_env(root, [str(_abs(p, root)) for p in pythonpath], _jobs(jobs)))


def _watched_files(patches, todo, index, selected, root: Path, fixtures: Path, helpers: GateHelpers) -> list[str]:
    files = {patches[p["id"]].path for p in todo}
    gate_files = {index.file_of(g) for g in selected}
    files |= {str(root / f) for f in gate_files}
    files |= {str(path) for f in gate_files for path in helpers.of(f).values()}
    if fixtures.is_dir():
        files |= {str(f) for f in fixtures.rglob("*") if f.is_file()}
    return sorted(files)


def _check_forced(child: launch.ChildRun) -> dict:
    from fidelity.perturb.forced_red_gate import FORCED_READING

    items = child.items
    it = items[0] if len(items) == 1 else None
    reading = jsonio.decode_float((it or {}).get("readings", {}).get("reading")) if it else None
    seen = (
        child.status == "ok"
        and it is not None
        and it["outcome"] == "failed"
        and it.get("kind") == "assertion"
        and reading is not None
        and reading == FORCED_READING
    )
    if seen:
        detail = f"{it['exc_type']}: {(it.get('message') or '').splitlines()[0] if it.get('message') else ''}"
    elif child.status != "ok":
        detail = f"child {child.status_text}: {child.output_tail[-1500:]}"
    elif it is None:
        detail = f"expected one result, got {len(items)}"
    else:
        detail = (f"outcome {it['outcome']}, kind {it.get('kind')}, reading {reading} "
                  f"(expected failed by assertion with reading {FORCED_READING})")
    return {"seen_red": seen, "outcome": it["outcome"] if it else None, "kind": it.get("kind") if it else None,
            "reading": jsonio.encode_float(reading), "expected_reading": FORCED_READING, "detail": detail,
            "child": child.to_json()}


def _gate_of(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def _counts(nodeids) -> dict[str, int]:
    """Instances per gate among the node ids a child was asked to run."""
    out: dict[str, int] = {}
    for n in nodeids:
        out[_gate_of(n)] = out.get(_gate_of(n), 0) + 1
    return out


def _durations(child: launch.ChildRun) -> dict[str, float]:
    """Seconds each instance took in an unpatched run: the cost model for ordering children."""
    return {it["nodeid"]: float(it.get("duration_s") or 0.0) for it in child.items}


BATCH_SIZE = 24  # mutants per batch child: its collection is paid once per batch; progress comes per batch


def _batches(perts: list[dict], jobs: int) -> list[list[dict]]:
    """Perturbations (costliest first) dealt round-robin into at least `jobs` batches of at most
    BATCH_SIZE, so every worker has one and each batch has a share of costly and cheap ones."""
    if not perts:
        return []
    count = max(jobs, -(-len(perts) // BATCH_SIZE))
    parts: list[list[dict]] = [[] for _ in range(min(count, len(perts)))]
    for i, p in enumerate(perts):
        parts[i % len(parts)].append(p)
    return parts


def _balanced_parts(nodeids: set[str], cost: dict[str, float], parts: int) -> list[set[str]]:
    """Node ids in at most `parts` non-empty groups of whole gates, of about equal summed cost
    (greedy: the costliest gate into the cheapest group)."""
    gates: dict[str, set[str]] = {}
    for n in nodeids:
        gates.setdefault(_gate_of(n), set()).add(n)
    weight = {g: sum(cost.get(n, 0.0) for n in ns) for g, ns in gates.items()}
    groups: list[tuple[float, set[str]]] = [(0.0, set()) for _ in range(max(1, min(parts, len(gates))))]
    for g in sorted(gates, key=lambda g: (-weight[g], g)):
        i = min(range(len(groups)), key=lambda i: groups[i][0])
        groups[i] = (groups[i][0] + weight[g], groups[i][1] | gates[g])
    return [ns for _, ns in groups if ns]


def _check_baseline(r: _Run, runs: list[launch.ChildRun], keeps: list[set[str]]) -> dict:
    """This run's clean runs (`runs`, each over the instances in `keeps`) and the kept ones judged
    together (clean_runs.judge): gates red in every run, flaky gates (a kept reading that differs
    from a new one too), the clean runs each instance has now, and their readings."""
    red, red_in, ran = [], {}, {}
    for k, (child, keep) in enumerate(zip(runs, keeps)):
        for g, count in sorted(_counts(keep).items()):
            ran[g] = ran.get(g, 0) + 1
            c = outcomes.classify_gate(g, r.index.file_of(g), child, count)
            if not c["outcome"].green:
                red.append({"gate": g, "run": f"run {k + 1}", "outcome": c["outcome"], "detail": c["detail"]})
                red_in.setdefault(g, []).append(k)
    kept = {n: e for n, e in r.kept.entries().items() if n in r.selected_instances}
    for g in r.selected:
        ran[g] = ran.get(g, 0) + max((e["runs"] for n, e in kept.items() if _gate_of(n) == g), default=0)
    kept_readings = [{n: e["readings"] for n, e in kept.items()}] if kept else []
    labels = ["the kept clean runs"] * len(kept_readings) + [f"run {k + 1}" for k in range(len(runs))]
    verdict = clean_runs.judge(red_in, kept_readings + [outcomes.readings_by_nodeid(c) for c in runs], ran, labels)
    items = {n: {"outcome": e["outcome"], "readings": e["readings"]} for n, e in kept.items()}
    items.update({it["nodeid"]: it for it in (runs[0].items if runs else [])})
    without = sorted({_gate_of(n) for n, it in items.items()
                      if it["outcome"] == "passed" and "reading" not in (it.get("readings") or {})})
    total = {n: r.kept_runs[n] + sum(1 for keep in keeps if n in keep) for n in r.selected_instances}
    return {
        "ok": not red and not verdict["flaky"],
        "gates": r.selected,
        "clean_runs": min(total.values(), default=0),  # the fewest any instance has, kept ones included
        "clean_runs_of": {g: min((v for n, v in total.items() if _gate_of(n) == g), default=0) for g in r.selected},
        "kept_instances": sum(1 for n in r.selected_instances if r.kept_runs[n]),
        "red": [x for x in red if x["gate"] in verdict["red"]],  # red in every run; red in some is flaky
        "flaky": verdict["flaky"],
        "labels": labels,
        "without_reading": without,
        "readings": dict(sorted((n, it.get("readings")) for n, it in items.items())),
        "runs": [c.to_json() for c in runs],
    }


def _fixtures_of(item: dict, root: Path) -> list[str]:
    """The fixture files an instance opened, as evidence names them (relative to the root)."""
    return sorted(paths.rel_to_root(f, root) for f in item.get("fixtures_read", []))


def _gate_result(g: str, index, child: launch.ChildRun, p: dict, root: Path, expected: int) -> GateResult:
    c = outcomes.classify_gate(g, index.file_of(g), child, expected)
    info = index.gates[g]
    return GateResult(
        gate=g,
        outcome=c["outcome"],
        reading=c["reading"],
        predicted=p["predicted"].get(g),
        listed=g in p["gates"],
        detail=c["detail"],
        gate_file=info["file"],
        equations=info["equations"],
        instances=c["instances"],
        fixtures_read=sorted(paths.rel_to_root(f, root) for f in c["fixtures_read"]),
    )


def _record(p, pr: PerturbationResult, patch, o: GateResult, root: Path, hashes_before, vers, now,
            runs: int, helpers: dict[str, Path]) -> dict:
    def sha(path: str | Path) -> str | None:
        full = str(paths.resolve(str(path), root))
        return hashes_before.get(full) or jsonio.sha256_file(full)

    pred = None
    if o.predicted is not None:
        pred = {"reading": jsonio.encode_float(o.predicted["reading"]), "note": o.predicted.get("note", "")}
    return {
        "schema": record.SCHEMA,
        "perturbation": p["id"],
        "title": p["title"],
        "spec_file": p["file"],
        "target": p["target"],
        "target_file": pr.target_file,
        "edits": p["edits"],
        "edits_sha256": record.edits_sha256(p["target"], p["edits"]),
        "diff": patch.diff,
        "gate": o.gate,
        "gate_file": o.gate_file,
        "equations": o.equations,
        "listed": o.listed,
        "outcome": o.outcome,
        "detail": o.detail,
        "reading": jsonio.encode_float(o.reading),
        "predicted": pred,
        "instances": o.instances,
        "green_after": o.green_after,
        "clean_runs": runs,  # unpatched runs of its instances, all green with identical readings (clean_runs.py)
        "patch_served": (pr.child or {}).get("patch_served"),
        "hashes": {
            "gate_file": sha(o.gate_file),
            "target_source": patch.original_sha256,
            "fixtures": {fx: sha(fx) for fx in o.fixtures_read},
            "helpers": {name: sha(path) for name, path in helpers.items()},
        },
        "versions": vers,
        "recorded_at": now,
    }


def _from_records(pr: PerturbationResult, records: list, refused: list) -> None:
    """Fill a PerturbationResult from current evidence (stale_only: not re-run), judged by today's spec:
    a gate is listed as the spec lists it now, and what check refuses of them (`refused`) are its misses."""
    pr.status = "current"
    pr.outcomes = [_result_from_record(rec) for rec in records]
    for o in pr.outcomes:
        o.listed = o.gate in pr.listed
    outcome_of = {rec.gate: rec.outcome for rec in records}
    pr.refused = [{"gate": x.gate, "outcome": Outcome(outcome_of[x.gate]).value, "detail": x.sentence()}
                  for x in refused]
    pr.restored = all(o.green_after is True for o in pr.outcomes) if pr.outcomes else None


def _result_from_record(rec, kept: bool = False) -> GateResult:
    """A gate's outcome as its record holds it."""
    pred = rec.predicted
    if pred is not None:
        pred = dict(pred, reading=jsonio.decode_float(pred.get("reading")))
    return GateResult(
        gate=rec.gate, outcome=rec.outcome, reading=jsonio.decode_float(rec.reading), predicted=pred,
        listed=rec.listed, detail=rec.detail, green_after=rec.green_after, gate_file=rec.gate_file,
        equations=list(rec.equations), instances=list(rec.instances), fixtures_read=rec.fixtures, kept=kept,
    )


def _rmtree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
