"""`fidelity perturb --stale` lists, row by row, the records of the perturbations it ran; of those whose evidence
is current (not re-run) it says how many and where their records are, instead of a row per record (in CI, with
nothing stale, that was 13,011 rows). What check refuses of a current perturbation's records is still said
(MISS lines), and --json still lists every record."""
import json

from fidelity.perturb.outcomes import Outcome
from fidelity.perturb.result import GateResult, PerturbationResult, RunResult

GATE_A, GATE_B = "tests/gates/test_a.py::test_a", "tests/gates/test_b.py::test_b"


def _perturbation(pid: str, status: str, gates: list[str], refused: list[dict] | None = None) -> PerturbationResult:
    outcomes = [GateResult(gate=g, outcome=Outcome.RED_BY_ASSERTION, reading=2.5, predicted=None, listed=(g == GATE_A),
                           green_after=True) for g in gates]
    return PerturbationResult(id=pid, title="t", target="m", target_file="m.py", spec_file=None, diff="", gates=gates,
                              listed=[GATE_A], outcomes=outcomes, restored=True, status=status, refused=refused or [])


def _result(*perturbations: PerturbationResult) -> RunResult:
    result = RunResult(perturbations=list(perturbations))
    result.compute_ok()
    return result


def test_the_rows_are_the_perturbations_that_ran_and_the_current_ones_are_counted():
    result = _result(_perturbation("P_ran", "ran", [GATE_A]), _perturbation("P_kept", "current", [GATE_A, GATE_B]),
                     _perturbation("P_kept2", "current", [GATE_A]))
    table = result.table()
    rows = [line for line in table.splitlines() if " | " in line]
    assert [r.split(" | ")[0].strip() for r in rows[2:]] == ["P_ran"], table
    assert ("2 perturbations with current evidence were not re-run: their 3 records are not listed here "
            "(`fidelity report` renders them; --json lists them)") in table, table
    listed = {p["id"]: len(p["outcomes"]) for p in json.loads(result.dumps())["perturbations"]}
    assert listed == {"P_ran": 1, "P_kept": 2, "P_kept2": 1}


def test_with_nothing_stale_there_is_no_empty_table_and_a_refusal_is_still_said():
    refused = [{"gate": GATE_A, "outcome": Outcome.SURVIVED, "detail": ""}]
    table = _result(_perturbation("P_kept", "current", [GATE_A, GATE_B], refused=refused)).table()
    assert " | " not in table, table
    assert table.splitlines()[0] == ("1 perturbation with current evidence was not re-run: its 2 records are not "
                                     "listed here (`fidelity report` renders them; --json lists them)"), table
    assert f"MISS P_kept: listed gate {GATE_A} survived" in table, table


def test_a_run_of_chosen_ids_lists_every_record_as_before():
    table = _result(_perturbation("P1", "ran", [GATE_A, GATE_B])).table()
    assert [line.split(" | ")[0].strip() for line in table.splitlines() if " | " in line][2:] == ["P1", "P1"], table
    assert "current evidence" not in table
