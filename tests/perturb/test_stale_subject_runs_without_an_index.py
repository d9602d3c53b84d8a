"""`perturb --stale` judges a perturbation of someone else's package from its records alone when it can.

A perturbation that names a subject runs only the gates it names, so the gate index (a collect-only child
that imports that package, seconds each, three packages in this project) adds nothing to which records it
needs: when every one of them is current, nothing is collected and nothing runs. A named gate without a
current record still goes through the index, which refuses a gate it does not know.
"""
from __future__ import annotations

import shutil

import pytest

from fidelity.perturb import UnknownGate, run

from .conftest import ARITH, GATE_ADD, GATE_SCALE, make_toy_repo

P_ADD = {"id": "P_add", "target": "toysubj.arith", "edits": [{"find": "return a + b", "replace": "return a - b"}],
         "gates": [GATE_ADD], "subject": "toy"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    repo = make_toy_repo(tmp_path_factory.mktemp("subject") / "repo")
    assert run([P_ADD], test_paths=[ARITH], repo_root=repo, jobs=2, timeout_s=60).ok
    return repo


@pytest.fixture
def repo(recorded, tmp_path):
    return shutil.copytree(recorded, tmp_path / "repo")


def _stale(repo, *perts):
    events: list[dict] = []
    result = run(list(perts), test_paths=[ARITH], repo_root=repo, jobs=2, timeout_s=60, stale_only=True,
                 progress=events.append)
    return result, {e["event"] for e in events}


def test_current_records_of_a_subjects_perturbation_need_no_gate_index(repo):
    result, events = _stale(repo, P_ADD)
    assert result.ok and result.perturbations[0].status == "current"
    assert result.perturbations[0].red_by_assertion == [GATE_ADD]
    assert "collect" not in events


def test_a_stale_record_goes_through_the_index_and_runs(repo):
    with open(repo / ARITH, "a") as f:
        f.write("\nEDITED = 1\n")
    result, events = _stale(repo, P_ADD)
    assert "collect" in events and result.ok and result.perturbations[0].status == "ran"


def test_a_named_gate_without_a_record_is_judged_by_the_index(repo):
    with pytest.raises(UnknownGate):
        _stale(repo, dict(P_ADD, gates=[GATE_ADD, f"{ARITH}::test_no_such_gate"]))
    result, events = _stale(repo, dict(P_ADD, gates=[GATE_ADD, GATE_SCALE]))
    assert "collect" in events and result.perturbations[0].status == "ran"
