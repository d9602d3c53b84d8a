"""Step 4, the baseline: the selected gates unpatched in the clean runs (those kept from earlier runs
counted), judged with the forced failure; a red, flaky or untrusted baseline stops the run. With
trace_lines, the first clean run also says which instances reach each perturbation's changed code."""
from __future__ import annotations

import concurrent.futures as cf

from fidelity.perturb import clean_runs, launch, outcomes
from fidelity.perturb.kept_clean_runs import KeptCleanRuns
from fidelity.perturb.line_trace import reaches
from fidelity.perturb.stages.children import Children
from fidelity.perturb.stages.forced import check_forced, submit_forced_failure
from fidelity.perturb.stages.items import fixtures_of, gate_of, instances_per_gate
from fidelity.perturb.stages.state import Run


def select(r: Run) -> None:
    """Sets r.clean.selected and r.clean.selected_instances: what the clean runs run; r.clean.kept and
    r.clean.kept_runs: the clean runs kept from earlier runs under each instance's key now (none for an observation)."""
    r.clean.selected = sorted({g for p in r.selection.todo for g in r.selection.gates_of[p["id"]]})
    r.clean.selected_instances = set().union(*(r.selection.instances_of[p["id"]] for p in r.selection.todo))
    if not r.s.observe:
        r.clean.kept = KeptCleanRuns.for_run(r.s.records_root, r.s.root, r.s.test_paths, r.s.fixtures,
                                             r.selection.index, r.s.env, r.clean.selected_instances)
    r.clean.kept_runs = {n: r.clean.kept.kept(n) for n in r.clean.selected_instances}
    r.clean.known_green = {n for n, k in r.clean.kept_runs.items() if k >= clean_runs.CLEAN_RUNS}


def run_with_forced_failure(r: Run, children: Children, forced: cf.Future | None) -> bool:
    """Sets r.clean.runs, r.result.forced_failure and r.result.baseline: the clean runs and the
    forced failure (`forced`, or started here), judged. False: the run stops (r.result.error)."""
    s = r.s
    n_runs = clean_runs.OBSERVATION_RUNS if s.observe else clean_runs.CLEAN_RUNS
    kept = sum(1 for n in r.clean.selected_instances if r.clean.kept_runs[n] >= n_runs)
    s.emit("baseline", f"baseline: {len(r.clean.selected)} gates, unpatched, {n_runs} runs"
                       + (f" ({n_runs} kept for {kept} of {len(r.clean.selected_instances)} instances, whose inputs are "
                          "unchanged: the rest are run)" if kept else "") + "; forced failure")
    if forced is None:
        forced = submit_forced_failure(children)
    run_futures = _submit_clean_runs(r, children, n_runs)
    forced_child, r.clean.runs = forced.result(), [f.result() for f in run_futures]

    r.result.forced_failure = check_forced(forced_child)
    s.emit("forced_failure", "forced failure: " + ("seen red by assertion" if r.result.forced_failure["seen_red"]
                                                   else "NOT seen red: " + r.result.forced_failure["detail"]))
    r.result.baseline = _check_baseline(r, r.clean.runs, r.clean.keeps)
    s.emit("baseline", "baseline: " + (f"green in all {n_runs} runs, readings identical" if r.result.baseline["ok"]
                                       else "FAILED"))
    if not _baseline_trusted(r):
        return False
    r.clean.fixtures = _baseline_fixtures(r)
    return True


def _submit_clean_runs(r: Run, children: Children, n_runs: int) -> list[cf.Future]:
    """Clean run k runs the instances that still need k or more (n_runs less those kept under
    their key), so each instance has n_runs in all; when none needs any, no child runs."""
    to_go = {n: max(0, n_runs - r.clean.kept_runs[n]) for n in r.clean.selected_instances}
    r.clean.keeps = [{n for n, left in to_go.items() if left >= k}
                     for k in range(1, max(to_go.values(), default=0) + 1)]
    futures = []
    for k, keep in enumerate(r.clean.keeps, start=1):
        job = children.job(sorted({gate_of(n) for n in keep}), keep=keep, hear_calls=True)
        if k == 1 and r.s.trace_lines:  # the first baseline also says which instance runs which lines of the targets
            job["trace_lines"] = sorted({r.patches[p["id"]].path for p in r.selection.todo})
        futures.append(children.submit(f"baseline-{k}", job, r.s.timeout_s))
    return futures


def _baseline_trusted(r: Run) -> bool:
    """Whether the run may go on after its baseline; if not, why (r.result.error)."""
    forced, base = r.result.forced_failure, r.result.baseline
    if not forced["seen_red"]:
        r.stop("forced_failure", "the forced failure was not seen red by assertion, so red cannot be trusted: "
               + forced["detail"])
        return False
    if base["red"] and r.s.set_aside_red_baseline and not base["flaky"]:
        _set_aside_red_gates(r)
        return True
    r.clean.kept.forget({x["gate"] for x in base["red"]} | set(base["flaky"]))  # refused: their kept runs go
    if base["red"]:
        reds = "; ".join(f"{x['gate']} ({x['run']}): {x['outcome']}: {x['detail']}" for x in base["red"])
        r.stop("baseline_red", f"baseline red: gates fail with no perturbation applied: {reds}")
        return False
    if base["flaky"]:
        fl = "; ".join(clean_runs.describe(g, d, base["labels"]) for g, d in sorted(base["flaky"].items()))
        r.stop("flaky", f"flaky gates refused (red in some unpatched runs, or readings that differ between "
                        f"them): {fl}")
        return False
    for child in r.clean.runs:  # proved: kept now, so a run stopped later need not prove them again
        r.clean.kept.add(child, lambda it: fixtures_of(it, r.s.root))
    r.clean.kept.save()
    return True


def _set_aside_red_gates(r: Run) -> None:
    # someone else's package already fails these gates unperturbed (its findings): a mutant
    # cannot be told by them, so they are left out of this observation, and said so
    aside = sorted({x["gate"] for x in r.result.baseline["red"]})
    r.result.baseline["set_aside"] = aside
    r.s.emit("baseline", f"baseline: {len(aside)} gates already red unperturbed, set aside: {', '.join(aside)}")
    for p in r.selection.todo:
        r.selection.gates_of[p["id"]] = [g for g in r.selection.gates_of[p["id"]] if g not in aside]
        r.selection.instances_of[p["id"]] = {n for n in r.selection.instances_of[p["id"]] if gate_of(n) not in aside}
        r.results[p["id"]].gates = r.selection.gates_of[p["id"]]
    r.clean.selected = [g for g in r.clean.selected if g not in aside]


def keep_instances_that_reach(r: Run) -> None:
    """trace_lines: a perturbation runs only the instances that reached its changed code in
    baseline run 1; none did: it is unreached and runs no child."""
    executed = {it["nodeid"]: it.get("lines_executed") or {} for it in r.clean.runs[0].items}
    for p in r.selection.todo:
        if p["reach"] is None:
            continue
        path = r.patches[p["id"]].path
        keep = {n for n in r.selection.instances_of[p["id"]] if reaches(executed.get(n, {}).get(path), p["reach"])}
        r.selection.instances_of[p["id"]] = keep
        r.selection.gates_of[p["id"]] = sorted({gate_of(n) for n in keep})
        r.results[p["id"]].gates = r.selection.gates_of[p["id"]]
        r.results[p["id"]].unreached = not keep


def _check_baseline(r: Run, runs: list[launch.ChildRun], keeps: list[set[str]]) -> dict:
    """This run's clean runs (`runs`, each over the instances in `keeps`) and the kept ones judged
    together (clean_runs.judge): gates red in every run, flaky gates (a kept reading that differs
    from a new one too), the clean runs each instance has now, and their readings."""
    red, red_in, ran = [], {}, {}
    for k, (child, keep) in enumerate(zip(runs, keeps)):
        for g, count in sorted(instances_per_gate(keep).items()):
            ran[g] = ran.get(g, 0) + 1
            c = outcomes.classify_gate(g, r.selection.index.file_of(g), child, count)
            if not c["outcome"].green:
                red.append({"gate": g, "run": f"run {k + 1}", "outcome": c["outcome"], "detail": c["detail"]})
                red_in.setdefault(g, []).append(k)
    kept = {n: e for n, e in r.clean.kept.entries().items() if n in r.clean.selected_instances}
    for g in r.clean.selected:
        ran[g] = ran.get(g, 0) + max((e["runs"] for n, e in kept.items() if gate_of(n) == g), default=0)
    kept_readings = [{n: e["readings"] for n, e in kept.items()}] if kept else []
    labels = ["the kept clean runs"] * len(kept_readings) + [f"run {k + 1}" for k in range(len(runs))]
    verdict = clean_runs.judge(red_in, kept_readings + [outcomes.readings_by_nodeid(c) for c in runs], ran, labels)
    items = {n: {"outcome": e["outcome"], "readings": e["readings"]} for n, e in kept.items()}
    items.update({it["nodeid"]: it for it in (runs[0].items if runs else [])})
    without = sorted({gate_of(n) for n, it in items.items()
                      if it["outcome"] == "passed" and "reading" not in (it.get("readings") or {})})
    total = {n: r.clean.kept_runs[n] + sum(1 for keep in keeps if n in keep) for n in r.clean.selected_instances}
    return {
        "ok": not red and not verdict["flaky"],
        "gates": r.clean.selected,
        "clean_runs": min(total.values(), default=0),  # the fewest any instance has, kept ones included
        "clean_runs_of": {g: min((v for n, v in total.items() if gate_of(n) == g), default=0) for g in r.clean.selected},
        "kept_instances": sum(1 for n in r.clean.selected_instances if r.clean.kept_runs[n]),
        "red": [x for x in red if x["gate"] in verdict["red"]],  # red in every run; red in some is flaky
        "flaky": verdict["flaky"],
        "labels": labels,
        "without_reading": without,
        "readings": dict(sorted((n, it.get("readings")) for n, it in items.items())),
        "runs": [c.to_json() for c in runs],
    }


def _baseline_fixtures(r: Run) -> dict[str, set[str]]:
    """Per gate, the fixture files its clean runs read: this run's, and the kept ones' as their
    first run recorded them."""
    base_fx: dict[str, set] = {}
    for child in r.clean.runs:
        for it in child.items:
            base_fx.setdefault(it["gate"], set()).update(fixtures_of(it, r.s.root))
    for n, e in r.clean.kept.entries().items():
        base_fx.setdefault(gate_of(n), set()).update(e.get("fixtures_read") or ())
    return base_fx
