"""Clean runs: how many unpatched runs a gate must pass, identically, before red can be trusted.

A gate that fails in some processes and not others would be "caught" by any perturbation whose run
happens to be unlucky. So acceptance needs CLEAN_RUNS unpatched runs of the gate's instances, each
in a separate child, all green and with bit-identical readings. A gate failing in half of all
processes passes all of them with probability 0.5 ** CLEAN_RUNS = 1/1024: it is refused with
probability 1 - 1/1024 > 0.999 (`refusal_probability`). The count is recorded in each evidence
record (`clean_runs`), and each instance's clean runs are kept under the key of everything the run
read (clean_run_inputs.py, clean_run_store.py; the targets' sources by the functions the runs called:
kept_clean_runs.py): a later run whose inputs match counts them and runs only what is missing, so they
are paid again only when an input changes.

An observation (discover) expects nothing and writes no evidence: OBSERVATION_RUNS suffice to set
aside a gate that is red unperturbed and to see that readings repeat.

`judge` is the verdict over the runs: per gate, red in every run (a baseline that is red), red in
some (flaky, with the counts), or green everywhere with readings that move between runs (flaky:
its numbers are not reproducible, even though it passes).
"""
from __future__ import annotations

from typing import Mapping

from fidelity.evidence.record import CLEAN_RUNS  # the acceptance rule's number lives with the rule

OBSERVATION_RUNS = 2


def refusal_probability(fail_probability: float, runs: int = CLEAN_RUNS) -> float:
    """The probability that a gate failing independently with `fail_probability` per run fails at
    least once in `runs` clean runs (and is refused)."""
    return 1.0 - (1.0 - fail_probability) ** runs


def judge(red: dict[str, list[int]], readings: list[dict[str, object]], runs: int | Mapping[str, int],
          labels: list[str] | None = None) -> dict:
    """The verdict over the unpatched runs.

    red: gate -> the (0-based) runs in which it was not green; readings: per run, node id -> its
    encoded readings (NaN is the string "NaN", so it equals itself), only for the instances that run
    ran (runs may run different instances: one with kept clean runs needs fewer new ones); runs: how
    many runs there were, or per gate how many of them ran it (kept ones included); labels: how a
    run is named in the verdict (default "run k"). Returns {"red": [gates red in every run],
    "flaky": {gate: [...]}}, where a flaky gate has either {"red_in", "of"} (red in some runs only)
    or {"nodeid", "first", "then", "run", "first_run"} entries (a reading that moved; the runs are
    1-based positions in `readings`)."""
    ran = (lambda g: runs) if isinstance(runs, int) else (lambda g: runs.get(g, 0))
    always = sorted(g for g, seen in red.items() if len(set(seen)) == ran(g))
    flaky: dict[str, list[dict]] = {}
    for g, seen in sorted(red.items()):
        if g not in always:
            flaky[g] = [{"red_in": len(set(seen)), "of": ran(g)}]
    if not red:
        first_seen: dict[str, tuple[int, object]] = {}
        for k, run in enumerate(readings, start=1):
            for nodeid, value in sorted(run.items()):
                if nodeid not in first_seen:
                    first_seen[nodeid] = (k, value)
                    continue
                k0, first = first_seen[nodeid]
                gate = nodeid.split("[", 1)[0]
                if first != value and not any(e.get("nodeid") == nodeid for e in flaky.get(gate, [])):
                    flaky.setdefault(gate, []).append({"nodeid": nodeid, "first": first, "then": value, "run": k,
                                                       "first_run": k0})
    return {"red": always, "flaky": dict(sorted(flaky.items()))}


def describe(gate: str, entries: list[dict], labels: list[str] | None = None) -> str:
    """One flaky gate in words, for the run's error (`labels`: as judge was given them)."""
    e = entries[0]
    if "red_in" in e:
        return f"{gate}: red in {e['red_in']} of {e['of']} unpatched runs"
    name = (lambda k: labels[k - 1]) if labels else (lambda k: f"run {k}")
    return f"{gate}: {e['nodeid']} read {e['first']} in {name(e.get('first_run', 1))} and {e['then']} in {name(e['run'])}"
