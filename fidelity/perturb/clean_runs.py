"""Clean runs: how many unpatched runs a gate must pass, identically, before red can be trusted.

A gate that fails in some processes and not others would be "caught" by any perturbation whose run
happens to be unlucky. So acceptance needs CLEAN_RUNS unpatched runs of the gate's instances, each
in a separate child, all green and with bit-identical readings. A gate failing in half of all
processes passes all of them with probability 0.5 ** CLEAN_RUNS = 1/1024: it is refused with
probability 1 - 1/1024 > 0.999 (`refusal_probability`). The count is recorded in each evidence
record (`clean_runs`), so it is paid again only when the record goes stale.

An observation (discover) expects nothing and writes no evidence: OBSERVATION_RUNS suffice to set
aside a gate that is red unperturbed and to see that readings repeat.

`judge` is the verdict over the runs: per gate, red in every run (a baseline that is red), red in
some (flaky, with the counts), or green everywhere with readings that move between runs (flaky:
its numbers are not reproducible, even though it passes).
"""
from __future__ import annotations

from fidelity.evidence.record import CLEAN_RUNS  # the acceptance rule's number lives with the rule

OBSERVATION_RUNS = 2


def refusal_probability(fail_probability: float, runs: int = CLEAN_RUNS) -> float:
    """The probability that a gate failing independently with `fail_probability` per run fails at
    least once in `runs` clean runs (and is refused)."""
    return 1.0 - (1.0 - fail_probability) ** runs


def judge(red: dict[str, list[int]], readings: list[dict[str, object]], runs: int) -> dict:
    """The verdict over `runs` unpatched runs.

    red: gate -> the (0-based) runs in which it was not green; readings: per run, node id -> its
    encoded readings (NaN is the string "NaN", so it equals itself). Returns {"red": [gates red in
    every run], "flaky": {gate: [...]}}, where a flaky gate has either {"red_in", "of"} (red in some
    runs only) or {"nodeid", "first", "then", "run"} entries (a reading that moved)."""
    always = sorted(g for g, seen in red.items() if len(set(seen)) == runs)
    flaky: dict[str, list[dict]] = {}
    for g, seen in sorted(red.items()):
        if g not in always:
            flaky[g] = [{"red_in": len(set(seen)), "of": runs}]
    if not red and readings:
        first = readings[0]
        for k, later in enumerate(readings[1:], start=2):
            for nodeid in sorted(set(first) | set(later)):
                if first.get(nodeid) != later.get(nodeid):
                    gate = nodeid.split("[", 1)[0]
                    if not any(e.get("nodeid") == nodeid for e in flaky.get(gate, [])):
                        flaky.setdefault(gate, []).append({"nodeid": nodeid, "first": first.get(nodeid),
                                                           "then": later.get(nodeid), "run": k})
    return {"red": always, "flaky": dict(sorted(flaky.items()))}


def describe(gate: str, entries: list[dict]) -> str:
    """One flaky gate in words, for the run's error."""
    e = entries[0]
    if "red_in" in e:
        return f"{gate}: red in {e['red_in']} of {e['of']} unpatched runs"
    return f"{gate}: {e['nodeid']} read {e['first']} in run 1 and {e['then']} in run {e['run']}"
