"""Issue 50: `fidelity perturb P7` said only "MISS P7: listed gate ... skipped"; the reason (a typo that left
no subject, no CUDA device, a subject that refused) was in --json alone. The text says it too."""
from fidelity.perturb.outcomes import Outcome
from fidelity.perturb.result import GateResult, PerturbationResult, RunResult

GATE = "tests/gates/test_x.py::test_y"


def _table(outcome: str, detail: str) -> str:
    gate = GateResult(gate=GATE, outcome=outcome, reading=None, predicted=None, listed=True, detail=detail,
                      green_after=True)
    p = PerturbationResult(id="P7", title="t", target="m", target_file="m.py", spec_file=None, diff="",
                           gates=[GATE], listed=[GATE], outcomes=[gate], restored=True)
    result = RunResult(perturbations=[p])
    result.compute_ok()
    return result.table()


def test_a_skipped_listed_gate_says_why_in_the_text():
    table = _table(Outcome.SKIPPED, "Skipped: not run: no CUDA device")
    assert f"MISS P7: listed gate {GATE} skipped (not run: no CUDA device)" in table, table


def test_a_listed_gate_that_survived_has_nothing_to_add():
    assert f"MISS P7: listed gate {GATE} survived\n" in _table(Outcome.SURVIVED, "")
