"""The reading of a red gate is the failing assertion's (issue 50, point 6): a gate that passes an assert_close
and then fails a plain assert recorded the passing comparison's 0, and the ledger showed "reading = 0" for a red
gate. Now a GateFailure's own number is the reading; a plain assert after a passing comparison has none (the
report says so); a plain assert on a number the gate recorded itself keeps that number."""
from __future__ import annotations

from fidelity.perturb import launch
from fidelity.perturb.outcomes import Outcome, classify_gate

from .conftest import make_toy_repo

GATES = "tests/toygate_red_reading.py"
TOY_GATES = '''
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.readings import record


def _passing_comparison():
    assert_close(torch.ones(3), torch.ones(3), Tolerance(eps_multiple=4), what="equal")  # reading 0, passes


@pytest.mark.gate(equations=["toy.add"])
def test_close_then_plain_assert():
    _passing_comparison()
    assert 1 + 1 == 3, "a plain assert with no number"


@pytest.mark.gate(equations=["toy.add"])
def test_close_then_a_failing_bound():
    _passing_comparison()
    assert_bound(7.0, at_most=2.0, what="a bound", reading_name="count")


@pytest.mark.gate(equations=["toy.add"])
def test_close_then_a_plain_assert_on_its_own_record():
    _passing_comparison()
    err = record(0.25)
    assert err <= 0.125, f"err {err}"
'''


def _red(tmp_path) -> dict[str, dict]:
    repo = make_toy_repo(tmp_path / "repo")
    (repo / GATES).write_text(TOY_GATES)
    job = {"mode": "run", "args": [GATES], "rootdir": str(repo), "fixtures_dir": str(repo / "fixtures"),
           "patch": None}
    child = launch.run_child(job, workdir=tmp_path / "work", label="plain", cwd=str(repo),
                             env=launch.child_env(str(repo)), timeout_s=120)
    assert child.status in ("ok", "failed"), child.output_tail
    names = ("test_close_then_plain_assert", "test_close_then_a_failing_bound",
             "test_close_then_a_plain_assert_on_its_own_record")
    return {n: classify_gate(f"{GATES}::{n}", GATES, child) for n in names}


def test_each_red_gate_reads_its_failing_assertions_number_or_none(tmp_path):
    red = _red(tmp_path)
    assert {n: r["outcome"] for n, r in red.items()} == dict.fromkeys(red, Outcome.RED_BY_ASSERTION)
    assert red["test_close_then_plain_assert"]["reading"] is None  # not the passing comparison's 0
    assert red["test_close_then_a_failing_bound"]["reading"] == 7.0  # the GateFailure's, whatever its name
    assert red["test_close_then_a_plain_assert_on_its_own_record"]["reading"] == 0.25


def test_the_report_says_a_red_gate_had_no_reading_rather_than_a_number():
    from fidelity.report.sections.red_to_green import observed_red_reading

    row = {"outcome": Outcome.RED_BY_ASSERTION, "observed": None, "basis": "observed"}
    assert "no number" in observed_red_reading(row)
    assert observed_red_reading(dict(row, observed=0.0)) != observed_red_reading(row)
