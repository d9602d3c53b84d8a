"""A subject that raises NotRun for a valid edge case (Sinkhorn's t_max = 0) still has its refusals
checked: the refusal gate's instances hold only inputs the interface refuses, and the valid case
has its own gate, whose instances alone are not run (issue 51, point 5)."""
import pytest

from subject_check import check_subjects

REFUSALS = "tests/gates/test_sinkhorn_contract.py::test_logits_that_are_not_square_matrices_and_a_negative_t_max_are_refused"
T_MAX_0 = "tests/gates/test_sinkhorn_contract.py::test_t_max_0_is_run_not_refused_and_is_exp_of_the_logits"


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    """Both subjects in one run of the gate files read (each judged on its own instances)."""
    return check_subjects(("no_t_max_0_adapter:SUBJECT", "no_t_max_0_adapter:NO_WIDTH_1_STACK"),
                          gate_files=("test_sinkhorn_contract.py", "test_mhc_stack.py"))


@pytest.fixture(scope="module")
def gates(reports) -> dict[str, dict]:
    report = reports["no_t_max_0_adapter:SUBJECT"]
    return {row["gate"]: row["subjects"]["no-t-max-0"] for row in report["gates"] if "no-t-max-0" in row["subjects"]}


def test_the_refusals_are_checked_when_t_max_0_is_not_run(gates):
    refusals = gates[REFUSALS]
    assert refusals["status"] == "passed" and refusals["passed"] >= 2, refusals  # both routes, on the CPU at least
    assert not any("t_max = 0" in r for r in refusals["not_run_reasons"]), refusals


def test_only_the_valid_edge_case_is_not_run_and_it_says_why(gates):
    t_max_0 = gates[T_MAX_0]
    assert t_max_0["status"] == "not run" and t_max_0["passed"] == 0, t_max_0
    assert any("t_max = 0 cannot be asked" in r for r in t_max_0["not_run_reasons"]), t_max_0


STACK_REFUSALS = ("tests/gates/test_mhc_stack.py::"
                  "test_a_stack_without_a_body_or_below_width_one_is_refused_and_one_of_width_one_runs")


def test_a_stack_that_cannot_run_width_1_still_has_its_refusals_checked(reports):
    """The width-1 run is its own instance: a NotRun there leaves the no-body and width-0 refusals checked."""
    report = reports["no_t_max_0_adapter:NO_WIDTH_1_STACK"]
    ran = {i["nodeid"].rsplit("-", 1)[-1].rstrip("]"): i for i in report["conformance"]["instances"]
           if i["gate"] == STACK_REFUSALS and "-cpu-" in i["nodeid"]}
    assert ran["no_body"]["outcome"] == ran["width_0"]["outcome"] == "passed", ran
    assert ran["width_1_runs"]["outcome"] == "not run" and "width 1 cannot be asked" in ran["width_1_runs"]["reason"]
