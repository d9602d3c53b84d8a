"""The perturbation runner: baseline, forced failure, perturbations, green after, evidence.

    result = run(perturbations, repo_root=".", reports_dir="reports")

The steps, in order (DESIGN.md, "The evidence rules"):
 1. check every perturbation dict; find every target's source file without
    importing it; compute every patch (PatchError / TargetNotFound /
    InvalidPerturbation raise here, before any child runs);
 2. the gate index (one cached collect-only child); the gates of a
    perturbation = those covering its target + those it lists or predicts
    (UnknownGate for a listed gate the index does not know); of each gate only
    the instances covering the target run (all of a listed gate's instances
    when none covers it);
 3. with stale_only, perturbations whose evidence is current are not re-run;
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
With warm_start (the default) children are forked from a zygote that has
imported torch and pytest once (warm_start.py; the caller may pass one to share
between runs); a perturbation whose target the zygote holds, and every child
when no zygote can start, starts cold. `environment` sets (None: unsets)
variables for this run's children only, e.g. the subject variables of a
third-party run, so runs with different subjects may proceed side by side.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable

from fidelity.evidence import jsonio, paths, record, staleness, store
from fidelity.perturb import gate_index, launch, outcomes
from fidelity.perturb import batch as batch_mod
from fidelity.perturb import clean_runs
from fidelity.perturb import warm_start as warm_start_mod
from fidelity.perturb.errors import InvalidPerturbation, UnknownGate
from fidelity.perturb.line_trace import reaches
from fidelity.perturb.result import GateResult, PerturbationResult, RunResult
from fidelity.targets import locate, patching
from fidelity.targets.errors import TargetNotFound

FORCED_RED_GATE = Path(__file__).with_name("forced_red_gate.py")
FIXTURES_DIR = "fixtures"

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
    evidence_dir: str | os.PathLike | None = None,
    observe: bool = False,
    first_red_only: bool = False,
    set_aside_red_baseline: bool = False,
    trace_lines: bool = False,
    batched: bool = False,
) -> RunResult:
    t_start = time.perf_counter()
    if observe and stale_only:
        raise InvalidPerturbation("an observation runs every perturbation afresh: stale_only does not apply")
    if (first_red_only or set_aside_red_baseline or trace_lines or batched) and not observe:
        raise InvalidPerturbation("first_red_only, set_aside_red_baseline, trace_lines and batched are for "
                                  "observations: acceptance needs every listed gate red, a green baseline, "
                                  "and each perturbation in a child of its own")
    root = Path(repo_root).resolve()
    records_root = _abs(evidence_dir, root) if evidence_dir is not None else paths.evidence_root(_abs(reports_dir, root))
    fixtures = _abs(fixtures_dir, root)
    cache = _abs(cache_dir, root) if cache_dir is not None else gate_index.cache_dir(root)
    test_paths = [str(t) for t in test_paths]
    pythonpath = [str(_abs(p, root)) for p in pythonpath]
    jobs = _jobs(jobs)
    base_env = _base_env(root, pythonpath, jobs)
    env = launch.with_overrides(base_env, environment)

    def emit(event: str, message: str, **extra) -> None:
        if progress is not None:
            progress(dict(extra, event=event, message=message))

    # 1. perturbations, targets, patches: every input error before any child runs
    perts = [validate(p) for p in perturbations]
    seen: dict[str, str] = {}
    for p in perts:
        key = paths.sanitise(p["id"])
        if key in seen:
            raise InvalidPerturbation(f"perturbation ids {seen[key]!r} and {p['id']!r} collide (same evidence directory)")
        seen[key] = p["id"]
    search = locate.child_search_path(str(root), pythonpath)
    patches: dict[str, patching.Patch] = {}
    for p in perts:
        try:
            path = locate.find_source(p["target"], search)
        except TargetNotFound as e:
            raise TargetNotFound(f"perturbation {p['id']}" + (f" ({p['file']})" if p["file"] else "") + f": {e}") from None
        patches[p["id"]] = patching.make_patch(p["id"], p["target"], path, p["edits"],
                                               display_path=locate.module_path(p["target"], path))

    workdir = tempfile.mkdtemp(prefix="fidelity-perturb-")
    pool = cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="fidelity-perturb")

    def job(args, patch=None, rootdir=root, keep=None):
        j = {"mode": "run", "args": list(args), "rootdir": str(rootdir), "fixtures_dir": str(fixtures), "patch": None,
             "keep": sorted(keep) if keep is not None else None, "env": dict(environment or {}),
             # a perturbation needs each gate red once: the rest of a red gate's instances are skipped
             "stop_gate_when_red": patch is not None,
             # an observation for discovery needs one gate red: everything after it is skipped
             "stop_when_any_red": patch is not None and first_red_only}
        if patch is not None:
            j["patch"] = {"perturbation": patch.perturbation_id, "module": patch.module,
                          "path": patch.path, "source": patch.patched}
        return j

    # a zygote the caller shares between runs (their environments differ only in `environment`,
    # which each child applies itself), or one of our own, or none
    own_zygote = warm_start and zygote is None
    warm = zygote if warm_start and zygote is not None else (
        warm_start_mod.LazyZygote(str(root), base_env) if own_zygote else None)

    def launch_child(label, j, timeout, target=None):
        zygote = warm.get() if warm is not None else None
        if zygote is not None and target is not None and zygote.holds(target):
            zygote = None  # the target is imported there already: its patch needs a fresh interpreter
        return launch.run_child(j, workdir=workdir, label=label, cwd=str(root), env=env, timeout_s=timeout,
                                zygote=zygote)

    def launch_batch(part):
        """One batch child for `part` (batch.py): [(perturbation, ChildRun or None)]; None for
        one its forks could not serve by code swap, or left no results (it runs alone then)."""
        label = f"batch-{part[0]['id']}"
        mutants = [{"id": p["id"], "module": p["target"], "path": patches[p["id"]].path,
                    "source": patches[p["id"]].patched, "keep": sorted(instances_of[p["id"]]),
                    "timeout_s": p["timeout_s"] or timeout_s,
                    "results": os.path.join(workdir, "batch-results", paths.sanitise(p["id"]) + ".json")}
                   for p in part]
        os.makedirs(os.path.join(workdir, "batch-results"), exist_ok=True)
        j_keep = set().union(*(instances_of[p["id"]] for p in part))
        j = dict(job(sorted({g for p in part for g in results[p["id"]].gates}), keep=j_keep),
                 mode="mutants", mutants=mutants, stop_gate_when_red=True, stop_when_any_red=first_red_only,
                 instance_seconds={n: cost.get(n, 0.0) for n in j_keep})
        batch_child = launch_child(label, j, sum(m["timeout_s"] for m in mutants) + timeout_s)
        out = []
        for p, m in zip(part, mutants):
            status = batch_mod.read_status(m["results"])
            child = None if status is None else launch.read_child(
                f"perturbation-{p['id']}", m["results"], returncode=status["returncode"],
                timed_out=status["timed_out"], wall_s=status["wall_s"], output_tail=batch_child.output_tail,
                start="batch")
            if child is not None and (child.results or {}).get(batch_mod.SWAP_IMPOSSIBLE):
                child = None
            out.append((p, child))
        alone = [p["id"] for p, c in out if c is None]
        if alone:
            why = (f"the batch child ended {batch_child.status_text}: {batch_child.output_tail[-1500:]}"
                   if batch_child.status != "ok" or len(alone) == len(out) else "code swap cannot serve them")
            emit("batch", f"{len(alone)} of {len(out)} run alone ({why}): {', '.join(alone[:5])}"
                          + (" ..." if len(alone) > 5 else ""))
        return out

    result = RunResult(observe=observe)
    results: dict[str, PerturbationResult] = {}
    try:
        def submit_forced():
            return pool.submit(launch_child, "forced-failure",
                               job([str(FORCED_RED_GATE)], rootdir=FORCED_RED_GATE.parent.parent.parent), timeout_s)

        # the forced failure needs nothing else: it runs while the gate index is collected
        # (with stale_only it waits until something is known to need running)
        ff = None if stale_only else submit_forced()

        # 2. gates
        emit("collect", "collecting the gate index")
        index = gate_index.collect(test_paths, repo_root=root, cache_dir=cache, pythonpath=pythonpath,
                                   timeout_s=max(timeout_s, 300), environment=environment,
                                   zygote=warm)
        gates_of: dict[str, list[str]] = {}
        instances_of: dict[str, set[str]] = {}  # node ids: the gates' instances that can see the patch
        for p in perts:
            named = set(p["gates"]) | set(p["predicted"])
            unknown = sorted(g for g in named if g not in index.gates)
            if unknown:
                raise UnknownGate(f"perturbation {p['id']}" + (f" ({p['file']})" if p["file"] else "")
                                  + f": unknown gate(s) {unknown}; known gates: {sorted(index.gates)}")
            # A perturbation of someone else's implementation (it names a subject) runs only the
            # gates it lists: the package's other red gates are findings about it, not a red baseline.
            covering = set() if p.get("subject") else set(index.gates_for_target(p["target"]))
            gates_of[p["id"]] = sorted(covering | named)
            instances_of[p["id"]] = {n for g in gates_of[p["id"]] for n in index.instances_covering(g, p["target"])}

        for p in perts:
            patch = patches[p["id"]]
            results[p["id"]] = PerturbationResult(
                id=p["id"], title=p["title"], target=p["target"], target_file=patch.display_path,
                spec_file=p["file"], diff=patch.diff, gates=gates_of[p["id"]], listed=p["gates"], status="not_run",
                observe=observe,
            )
        result.perturbations = [results[p["id"]] for p in perts]

        # 3. stale_only: keep what is current
        todo = list(perts)
        if stale_only:
            records = store.load_all(records_root)
            todo = []
            for p in perts:
                mine = {r.gate: r for r in records if r.perturbation == p["id"]}
                gates = gates_of[p["id"]]
                if gates and all(g in mine and staleness.is_current(mine[g], root, p) for g in gates):
                    _from_records(results[p["id"]], [mine[g] for g in gates])
                    emit("skip", f"{p['id']} ... evidence current, not re-run", id=p["id"])
                else:
                    todo.append(p)
        if not todo:
            result.baseline = {"skipped": "nothing to run"}
            result.wall_s = time.perf_counter() - t_start
            result.compute_ok()
            return result

        selected = sorted({g for p in todo for g in gates_of[p["id"]]})
        selected_instances = set().union(*(instances_of[p["id"]] for p in todo))
        watched = _watched_files(patches, todo, index, selected, root, fixtures)
        hashes_before = {f: jsonio.sha256_file(f) for f in watched}
        for p in todo:  # the text each patch was computed on is the "before" of its target
            hashes_before[patches[p["id"]].path] = patches[p["id"]].original_sha256

        # 4. baseline: the clean runs (+ the forced failure, already under way)
        n_runs = clean_runs.OBSERVATION_RUNS if observe else clean_runs.CLEAN_RUNS
        emit("baseline", f"baseline: {len(selected)} gates, unpatched, {n_runs} runs; forced failure")
        if ff is None:
            ff = submit_forced()
        j1 = job(selected, keep=selected_instances)
        if trace_lines:  # the first baseline also says which instance runs which lines of the targets
            j1["trace_lines"] = sorted({patches[p["id"]].path for p in todo})
        run_futures = [pool.submit(launch_child, "baseline-1", j1, timeout_s)]
        run_futures += [pool.submit(launch_child, f"baseline-{k}", job(selected, keep=selected_instances), timeout_s)
                        for k in range(2, n_runs + 1)]
        forced, runs = ff.result(), [f.result() for f in run_futures]
        b1 = runs[0]

        result.forced_failure = _check_forced(forced)
        emit("forced_failure", "forced failure: " + ("seen red by assertion" if result.forced_failure["seen_red"]
                                                     else "NOT seen red: " + result.forced_failure["detail"]))
        result.baseline = _check_baseline(runs, selected, index, _counts(selected_instances))
        emit("baseline", "baseline: " + (f"green in all {n_runs} runs, readings identical" if result.baseline["ok"]
                                         else "FAILED"))
        stop = None
        if not result.forced_failure["seen_red"]:
            stop = ("forced_failure", "the forced failure was not seen red by assertion, so red cannot be trusted: "
                    + result.forced_failure["detail"])
        elif result.baseline["red"] and set_aside_red_baseline and not result.baseline["flaky"]:
            # someone else's package already fails these gates unperturbed (its findings): a mutant
            # cannot be told by them, so they are left out of this observation, and said so
            aside = sorted({r["gate"] for r in result.baseline["red"]})
            result.baseline["set_aside"] = aside
            emit("baseline", f"baseline: {len(aside)} gates already red unperturbed, set aside: {', '.join(aside)}")
            for p in todo:
                gates_of[p["id"]] = [g for g in gates_of[p["id"]] if g not in aside]
                instances_of[p["id"]] = {n for n in instances_of[p["id"]] if n.split("[", 1)[0] not in aside}
                results[p["id"]].gates = gates_of[p["id"]]
            selected = [g for g in selected if g not in aside]
        elif result.baseline["red"]:
            reds = "; ".join(f"{r['gate']} ({r['run']}): {r['outcome']}: {r['detail']}" for r in result.baseline["red"])
            stop = ("baseline_red", f"baseline red: gates fail with no perturbation applied: {reds}")
        elif result.baseline["flaky"]:
            fl = "; ".join(clean_runs.describe(g, d) for g, d in sorted(result.baseline["flaky"].items()))
            stop = ("flaky", f"flaky gates refused (red in some unpatched runs, or readings that differ between "
                             f"them): {fl}")
        if stop is not None:
            result.error_kind, result.error = stop
            emit("error", result.error)
            result.wall_s = time.perf_counter() - t_start
            result.compute_ok()
            return result

        if trace_lines:  # a perturbation runs only the instances that reach its changed code
            executed = {it["nodeid"]: it.get("lines_executed") or {} for it in b1.items}
            for p in todo:
                if p["reach"] is None:
                    continue
                path = patches[p["id"]].path
                keep = {n for n in instances_of[p["id"]] if reaches(executed.get(n, {}).get(path), p["reach"])}
                instances_of[p["id"]] = keep
                gates_of[p["id"]] = sorted({_gate_of(n) for n in keep})
                results[p["id"]].gates = gates_of[p["id"]]
                results[p["id"]].unreached = not keep

        # 5. perturbations, one child each, the costliest first (their instances' baseline
        # durations), so the short ones fill the end; 6. green after: unpatched children over
        # every gate run, split into `jobs` parts of about equal cost (whole gates each), queued
        # behind the perturbations. Each child is a fresh process and nothing is ever written
        # to disk, so a green-after child may start as soon as a worker is free.
        cost = _durations(b1)
        total = len(todo)
        futures = {}

        def submit_one(p):
            t = p["timeout_s"] or timeout_s
            futures[pool.submit(launch_child, f"perturbation-{p['id']}",
                                job(results[p["id"]].gates, patches[p["id"]], keep=instances_of[p["id"]]),
                                t, p["target"])] = p

        with_gates = sorted((p for p in todo if results[p["id"]].gates),
                            key=lambda p: -sum(cost.get(n, 0.0) for n in instances_of[p["id"]]))
        if batched:
            for part in _batches(with_gates, jobs):
                futures[pool.submit(launch_batch, part)] = part
        else:
            for p in with_gates:
                submit_one(p)
        ran_gates = sorted({g for p in todo for g in results[p["id"]].gates})
        ran_instances = set().union(*(instances_of[p["id"]] for p in todo if results[p["id"]].gates))
        after_parts = _balanced_parts(ran_instances, cost, jobs)
        after_futures = [pool.submit(launch_child, f"green-after-{i + 1}",
                                     job(sorted({_gate_of(n) for n in part}), keep=part), timeout_s)
                         for i, part in enumerate(after_parts)]
        done_count = 0
        for p in todo:  # perturbations without gates: nothing can go red
            if not results[p["id"]].gates:
                results[p["id"]].status = "ran"
                done_count += 1
                emit("perturbation", f"[{done_count}/{total}] {p['id']} ... {results[p['id']].summary()}",
                     index=done_count, total=total, id=p["id"], status=results[p["id"]].summary())
        def finish(p, child):
            nonlocal done_count
            pr = results[p["id"]]
            pr.status = "ran"
            pr.child = child.to_json()
            counts = _counts(instances_of[p["id"]])
            pr.outcomes = [_gate_result(g, index, child, p, root, counts[g]) for g in pr.gates]
            done_count += 1
            emit("perturbation", f"[{done_count}/{total}] {p['id']} ... {pr.summary()}",
                 index=done_count, total=total, id=p["id"], status=pr.summary())

        while futures:
            fut = next(cf.as_completed(futures))
            what = futures.pop(fut)
            if isinstance(what, dict):
                finish(what, fut.result())
                continue
            for p, child in fut.result():  # a batch: what each fork left, or None to run it alone
                if child is None:
                    submit_one(p)
                else:
                    finish(p, child)

        if after_futures:
            emit("green_after", f"green after: {len(ran_gates)} gates, unpatched, in {len(after_futures)} children")
            after_children = [f.result() for f in after_futures]
            child_of = {_gate_of(n): c for part, c in zip(after_parts, after_children) for n in part}
            green = {}
            counts = _counts(ran_instances)
            for g in ran_gates:
                c = outcomes.classify_gate(g, index.file_of(g), child_of[g], counts[g])
                green[g] = outcomes.is_green(c["outcome"])
                for p in todo:
                    for o in results[p["id"]].outcomes:
                        if o.gate == g:
                            o.green_after = green[g]
                            o.fixtures_read = sorted(set(o.fixtures_read) | {paths.rel_to_root(f, root) for f in c["fixtures_read"]})
            for p in todo:
                pr = results[p["id"]]
                if pr.outcomes:
                    pr.restored = all(o.green_after for o in pr.outcomes)
            result.green_after = {"gates": ran_gates, "not_green": sorted(g for g, ok in green.items() if not ok),
                                  "children": [c.to_json() for c in after_children]}
            emit("green_after", "green after: " + ("all green" if all(green.values()) else
                                                   "NOT green: " + ", ".join(result.green_after["not_green"])))
        # fixtures read in the baseline belong to the gate too
        base_fx: dict[str, set] = {}
        for child in runs:
            for it in child.items:
                base_fx.setdefault(it["gate"], set()).update(it.get("fixtures_read", []))
        for p in todo:
            for o in results[p["id"]].outcomes:
                o.fixtures_read = sorted(set(o.fixtures_read) | {paths.rel_to_root(f, root) for f in base_fx.get(o.gate, ())})
    except BaseException:
        launch.kill_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if own_zygote:
            warm.close()
        _rmtree(workdir)

    # 7. nothing on disk moved
    hashes_after = {f: jsonio.sha256_file(f) for f in watched}
    for p in todo:  # every file under fixtures/ was hashed before: one read but not hashed appeared during the run
        for o in results[p["id"]].outcomes:
            for fx in o.fixtures_read:
                full = str(paths.resolve(fx, root))
                if full not in hashes_before:
                    hashes_before[full], hashes_after[full] = None, jsonio.sha256_file(full)
    changed = sorted(paths.rel_to_root(f, root) for f in hashes_before if hashes_before[f] != hashes_after.get(f))
    result.sources = {"watched": len(hashes_before), "changed": changed}
    if changed:
        result.error_kind = "source_changed"
        result.error = ("files changed on disk during the run (a gate, a target or a fixture); "
                        f"no evidence written: {changed}")
        emit("error", result.error)
        result.wall_s = time.perf_counter() - t_start
        result.compute_ok()
        return result

    if observe:  # an observation expected nothing, so it proves nothing: no evidence (module docstring)
        emit("evidence", "observation: no evidence written")
    else:
        _write_evidence(todo, results, patches, records_root, root, hashes_before, result, emit)
    result.wall_s = time.perf_counter() - t_start
    result.compute_ok()
    return result


def observe(perturbations: Iterable[dict], **options) -> RunResult:
    """Run `perturbations` expecting nothing: which gates go red, and how (run(observe=True))."""
    return run(perturbations, observe=True, **options)


def _write_evidence(todo, results, patches, records_root: Path, root: Path, hashes_before, result: RunResult,
                    emit) -> None:
    """Step 8: one record per gate run, and no records left of gates a perturbation no longer runs."""
    vers = record.versions()
    now = record.utc_now()
    for p in todo:
        pr = results[p["id"]]
        patch = patches[p["id"]]
        edir = paths.record_dir(records_root, p["id"])
        written = set()
        for o in pr.outcomes:
            rec = _record(p, pr, patch, o, root, hashes_before, vers, now, result.baseline["clean_runs"])
            path = store.write_record(records_root, rec)
            written.add(path.name)
            result.evidence.append(paths.rel_to_root(path, root))
        if edir.is_dir():  # records of gates this perturbation no longer runs
            for old in edir.glob("*.json"):
                if old.name not in written:
                    old.unlink()
    emit("evidence", f"evidence: {len(result.evidence)} records under {paths.rel_to_root(records_root, root)}")


# ---------------------------------------------------------------- helpers

def _jobs(jobs: int | None) -> int:
    return max(1, int(jobs or os.cpu_count() or 1))


def _base_env(root: Path, pythonpath: list[str], jobs: int) -> dict:
    """The children's environment before a run's `environment`: BLAS threads = cores / jobs."""
    return launch.child_env(str(root), pythonpath, threads=max(1, (os.cpu_count() or 1) // jobs))


def shared_zygote(repo_root: str | os.PathLike = ".", jobs: int | None = None,
                  pythonpath: Iterable[str] = ()) -> warm_start_mod.LazyZygote:
    """A zygote several runs with these settings may share (pass it as `zygote`; close it after)."""
    root = Path(repo_root).resolve()
    return warm_start_mod.LazyZygote(str(root), _base_env(root, [str(_abs(p, root)) for p in pythonpath], _jobs(jobs)))


def _watched_files(patches, todo, index, selected, root: Path, fixtures: Path) -> list[str]:
    files = {patches[p["id"]].path for p in todo}
    files |= {str(root / index.file_of(g)) for g in selected}
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


def _check_baseline(runs: list[launch.ChildRun], selected: list[str], index, counts: dict[str, int]) -> dict:
    """The clean runs judged (clean_runs.judge): gates red in every run, flaky gates, and run 1's readings."""
    red, red_in = [], {}
    for k, child in enumerate(runs):
        for g in selected:
            c = outcomes.classify_gate(g, index.file_of(g), child, counts.get(g))
            if not outcomes.is_green(c["outcome"]):
                red.append({"gate": g, "run": f"run {k + 1}", "outcome": c["outcome"], "detail": c["detail"]})
                red_in.setdefault(g, []).append(k)
    verdict = clean_runs.judge(red_in, [outcomes.readings_by_nodeid(c) for c in runs], len(runs))
    b1 = runs[0]
    without = sorted({it["gate"] for it in b1.items if it["outcome"] == "passed" and "reading" not in (it.get("readings") or {})})
    readings = {it["nodeid"]: it.get("readings") for it in b1.items}
    return {
        "ok": not red and not verdict["flaky"],
        "gates": selected,
        "clean_runs": len(runs),
        "red": [r for r in red if r["gate"] in verdict["red"]],  # red in every run; red in some is flaky
        "flaky": verdict["flaky"],
        "without_reading": without,
        "readings": dict(sorted(readings.items())),
        "runs": [c.to_json() for c in runs],
    }


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
            runs: int) -> dict:
    def sha(path: str) -> str | None:
        full = str(paths.resolve(path, root))
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
        },
        "versions": vers,
        "recorded_at": now,
    }


def _from_records(pr: PerturbationResult, records: list) -> None:
    """Fill a PerturbationResult from current evidence (stale_only: not re-run)."""
    pr.status = "current"
    pr.outcomes = []
    for r in records:
        pred = r.predicted
        if pred is not None:
            pred = dict(pred, reading=jsonio.decode_float(pred.get("reading")))
        pr.outcomes.append(GateResult(
            gate=r.gate, outcome=r.outcome, reading=jsonio.decode_float(r.reading), predicted=pred,
            listed=r.listed, detail=r.detail, green_after=r.green_after, gate_file=r.gate_file,
            equations=list(r.equations), instances=list(r.instances), fixtures_read=r.fixtures,
        ))
    pr.restored = all(o.green_after is True for o in pr.outcomes) if pr.outcomes else None


def _rmtree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
