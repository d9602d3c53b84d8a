"""`fidelity check --subject X --json` lists every instance the subject ran: its node id, outcome, the
reason where it did not pass, its inputs (parameters as text) and the calls the gate made to the subject
(issue 51, point 5: a tester had to log PYTEST_CURRENT_TEST from inside an adapter to learn this)."""
import pytest

from subject_check import reports_of

CONTRACT = "tests/gates/test_sinkhorn_contract.py::"
REFUSALS = CONTRACT + "test_logits_that_are_not_square_matrices_and_a_negative_t_max_are_refused"
T_MAX_0 = CONTRACT + "test_t_max_0_is_run_not_refused_and_is_exp_of_the_logits"


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    # SUBJECT's whole run: its every instance is listed; the other variant is read at the refusal gate alone
    return reports_of("no_t_max_0_adapter", ("SUBJECT", "ACCEPTS_NEGATIVE_T_MAX"),
                      gate_files={"ACCEPTS_NEGATIVE_T_MAX": ("test_sinkhorn_contract.py",)})


def _instances(report: dict, gate: str) -> dict[str, dict]:
    return {i["nodeid"]: i for i in report["conformance"]["instances"] if i["gate"] == gate}


def test_every_instance_of_the_subject_is_listed_once_with_an_outcome(reports):
    report = reports["SUBJECT"]
    listed = [i["nodeid"] for i in report["conformance"]["instances"]]
    per_gate = sum(row["subjects"]["no-t-max-0"]["passed"] + row["subjects"]["no-t-max-0"]["failed"]
                   + row["subjects"]["no-t-max-0"]["not_run"] for row in report["gates"] if "no-t-max-0" in row["subjects"])
    assert len(listed) == len(set(listed)) == per_gate > 0
    assert {i["outcome"] for i in report["conformance"]["instances"]} <= {"passed", "not run"}
    assert all((i["reason"] is None) == (i["outcome"] == "passed") for i in report["conformance"]["instances"])


def test_a_not_run_instance_says_why_and_what_it_was_given(reports):
    cpu = {n: i for n, i in _instances(reports["SUBJECT"], T_MAX_0).items() if i["inputs"]["device"] == "cpu"}
    assert {i["inputs"]["backward"] for i in cpu.values()} == {"autograd", "manual"}
    for entry in cpu.values():
        assert entry["outcome"] == "not run" and "t_max = 0 cannot be asked" in entry["reason"], entry
        assert entry["inputs"]["subject"] == "no-t-max-0" and entry["equations"] == ["mhc.eq9"]
        assert entry["calls"] == [f"sinkhorn(tensor[2, 2] float64 cpu, backward='{entry['inputs']['backward']}', t_max=0)"]


def test_a_passed_instance_lists_the_calls_it_made(reports):
    cpu = [i for i in _instances(reports["SUBJECT"], REFUSALS).values() if i["inputs"]["device"] == "cpu"]
    assert cpu and all(i["outcome"] == "passed" for i in cpu)
    for entry in cpu:
        route = entry["inputs"]["backward"]
        assert f"sinkhorn(tensor[2, 2] float64 cpu, backward='{route}', t_max=-1)" in entry["calls"], entry
        assert f"sinkhorn(tensor[3] float64 cpu, backward='{route}')" in entry["calls"], entry  # a non-square shape


def test_a_finding_gives_its_reason(reports):
    cpu = [i for i in _instances(reports["ACCEPTS_NEGATIVE_T_MAX"], REFUSALS).values() if i["inputs"]["device"] == "cpu"]
    assert cpu and all(i["outcome"] == "finding" for i in cpu), cpu
    assert all(i["reason"].startswith("inputs Eq. 9 does not define were not refused with ValueError") for i in cpu)
    assert all("t_max = -1" in i["reason"] for i in cpu)
