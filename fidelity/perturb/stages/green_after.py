"""Step 6, green after: unpatched children over the gates the perturbations ran, in parts of whole gates
balanced by their baseline durations; instances whose green is known from kept clean runs are not run.
A reading that differs from the clean runs' makes its gate flaky and stops the run."""
from __future__ import annotations

import concurrent.futures as cf
from dataclasses import dataclass

from fidelity.evidence import paths
from fidelity.perturb import outcomes
from fidelity.perturb.result import GateResult
from fidelity.perturb.stages.children import Children
from fidelity.perturb.stages.items import fixtures_of, gate_of, instances_per_gate
from fidelity.perturb.stages.state import Run


@dataclass(frozen=True)
class GreenAfter:
    """Step 6 under way: unpatched children over every gate a perturbation ran, in parts of whole gates,
    but for the instances whose green is already known (`kept`, see submit)."""
    gates: list[str]
    instances: set[str]
    parts: list[set[str]]
    futures: list[cf.Future]
    kept: set[str]


def submit(r: Run, children: Children) -> GreenAfter:
    """An instance with CLEAN_RUNS clean runs kept under its key from earlier runs is not run again:
    unpatched, with the same inputs (step 7 hashes them after), it was green every time, so the
    run would repeat a known answer. The others (those whose clean runs this run made) are run."""
    every = set().union(*(r.selection.instances_of[p["id"]] for p in r.selection.todo if r.results[p["id"]].gates))
    kept = every & r.clean.known_green
    instances = every - kept
    gates = sorted({gate_of(n) for n in instances})
    parts = balanced_parts(instances, r.clean.cost, r.s.jobs)
    futures = [children.submit(f"green-after-{i + 1}",
                               children.job(sorted({gate_of(n) for n in part}), keep=part, hear_calls=True),
                               r.s.timeout_s)
               for i, part in enumerate(parts)]
    return GreenAfter(gates, instances, parts, futures, kept)


def judge(r: Run, after: GreenAfter) -> bool:
    """Sets each outcome's green_after (and the fixtures its gate read), each perturbation's
    restored, and r.result.green_after. Green after is one more clean run of what it ran: a reading
    that differs from the clean runs' makes its gate flaky and stops the run (False)."""
    r.s.emit("green_after", f"green after: {len(after.gates)} gates, unpatched, in {len(after.futures)} children")
    after_children = [f.result() for f in after.futures]
    moved = [d for c in after_children for d in r.clean.kept.differing(c)]
    if moved:
        r.clean.kept.forget({gate_of(d["nodeid"]) for d in moved})
        r.result.green_after = {"gates": after.gates, "moved": moved, "children": [c.to_json() for c in after_children]}
        r.stop("flaky", "flaky gates refused (readings that differ between unpatched runs): " + "; ".join(
            f"{gate_of(d['nodeid'])}: {d['nodeid']} read {d['first']} in the clean runs and {d['then']} in green after"
            for d in moved))
        return False
    child_of = {gate_of(n): c for part, c in zip(after.parts, after_children) for n in part}
    green = {}
    counts = instances_per_gate(after.instances)
    for g in after.gates:
        c = outcomes.classify_gate(g, r.selection.index.file_of(g), child_of[g], counts[g])
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
        r.clean.kept.add(c, lambda it: fixtures_of(it, r.s.root))
    r.clean.kept.forget(not_green)  # red unpatched once: its clean runs start again
    return True


def green_by_kept_runs(r: Run, after: GreenAfter) -> None:
    """Gates whose every instance ran no green-after child (all kept): green after, as the kept
    clean runs of the same inputs say; each perturbation's restored over all its gates."""
    kept_gates = {gate_of(n) for n in after.kept} - set(after.gates)
    for g in kept_gates:
        for o in _outcomes_of_gate(r, g):
            o.green_after = True
    for p in r.selection.todo:
        pr = r.results[p["id"]]
        if pr.outcomes:
            pr.restored = all(o.green_after for o in pr.outcomes)
    if kept_gates:
        r.result.green_after = dict(r.result.green_after or {"gates": [], "not_green": [], "children": []},
                                    kept=sorted(kept_gates))
        r.s.emit("green_after", f"green after: {len(kept_gates)} gates known green from their kept clean runs "
                                "(inputs unchanged), not run again")


def _outcomes_of_gate(r: Run, gate: str) -> list[GateResult]:
    return [o for p in r.selection.todo for o in r.results[p["id"]].outcomes if o.gate == gate]


def balanced_parts(nodeids: set[str], cost: dict[str, float], parts: int) -> list[set[str]]:
    """Node ids in at most `parts` non-empty groups of whole gates, of about equal summed cost
    (greedy: the costliest gate into the cheapest group)."""
    gates: dict[str, set[str]] = {}
    for n in nodeids:
        gates.setdefault(gate_of(n), set()).add(n)
    weight = {g: sum(cost.get(n, 0.0) for n in ns) for g, ns in gates.items()}
    groups: list[tuple[float, set[str]]] = [(0.0, set()) for _ in range(max(1, min(parts, len(gates))))]
    for g in sorted(gates, key=lambda g: (-weight[g], g)):
        i = min(range(len(groups)), key=lambda i: groups[i][0])
        groups[i] = (groups[i][0] + weight[g], groups[i][1] | gates[g])
    return [ns for _, ns in groups if ns]
