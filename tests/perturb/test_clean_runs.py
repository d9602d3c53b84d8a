"""Acceptance refuses a flaky gate with a stated confidence. Issue 15: a gate made to fail in half of
all processes was accepted in 1 of 10 runs of `fidelity perturb P5` (three clean runs: 1 in 8)."""
import random

from fidelity.evidence.record import SCHEMA, EvidenceRecord, record_hash
from fidelity.perturb import clean_runs

GATE = "tests/gates/test_g.py::test_g"


def _attempt(rng: random.Random, fail_probability: float) -> bool:
    """One acceptance attempt on a gate failing in each process with `fail_probability`: accepted?"""
    red = [k for k in range(clean_runs.CLEAN_RUNS) if rng.random() < fail_probability]
    verdict = clean_runs.judge({GATE: red} if red else {}, [{} for _ in range(clean_runs.CLEAN_RUNS)],
                               clean_runs.CLEAN_RUNS)
    return not verdict["red"] and not verdict["flaky"]


def test_a_gate_failing_in_half_of_all_runs_is_refused_with_probability_at_least_0_999():
    assert clean_runs.CLEAN_RUNS >= 10
    assert clean_runs.refusal_probability(0.5) >= 0.999
    rng = random.Random(20261201)  # today's date, fixed before the first run: not a seed chosen to pass
    accepted = sum(_attempt(rng, 0.5) for _ in range(1000))
    assert 1000 - accepted >= 999, f"{accepted} of 1000 attempts accepted a 50%-flaky gate"


def test_a_gate_that_never_fails_is_accepted_every_time():
    rng = random.Random(1)
    assert all(_attempt(rng, 0.0) for _ in range(100))


def test_red_in_every_run_is_a_red_baseline_and_red_in_some_is_flaky_with_the_counts():
    runs = 10
    verdict = clean_runs.judge({"a": list(range(runs)), "b": [3, 7]}, [{} for _ in range(runs)], runs)
    assert verdict == {"red": ["a"], "flaky": {"b": [{"red_in": 2, "of": 10}]}}
    assert clean_runs.describe("b", verdict["flaky"]["b"]) == "b: red in 2 of 10 unpatched runs"


def test_a_reading_that_moves_between_runs_is_flaky_even_when_every_run_passes():
    same = {f"{GATE}[x]": {"reading": 0.25}}
    moved = {f"{GATE}[x]": {"reading": 0.2500000001}}
    verdict = clean_runs.judge({}, [same, same, moved], 3)
    assert verdict["red"] == [] and verdict["flaky"] == {
        GATE: [{"nodeid": f"{GATE}[x]", "first": {"reading": 0.25}, "then": {"reading": 0.2500000001}, "run": 3,
               "first_run": 1}]}
    assert clean_runs.judge({}, [same, same, same], 3) == {"red": [], "flaky": {}}


def _accepted(record: dict) -> bool:
    return EvidenceRecord.from_json({**record, "record_sha256": record_hash(record)}).accepted


def test_a_record_accepts_only_after_enough_clean_runs():
    record = {"schema": SCHEMA, "perturbation": "P1", "gate": GATE, "gate_file": "tests/gates/test_g.py", "target": "m",
              "hashes": {}, "edits_sha256": "0", "outcome": "red_by_assertion", "green_after": True,
              "clean_runs": clean_runs.CLEAN_RUNS}
    assert _accepted(record)
    assert not _accepted({**record, "clean_runs": 2})  # the runner's count before issue 15
    assert not _accepted({k: v for k, v in record.items() if k != "clean_runs"})
    assert not _accepted({**record, "green_after": False})
    assert not _accepted({**record, "outcome": "red_other"})
