"""A gate that only covers a perturbation's target is not run again while its record is current.

Issue 30 ("perturbations pay only for what they decide"): `fidelity perturb P1..P5` ran about 200
gate outcomes, 160 of them gates that merely cover the targets and whose records were current. Now
those records stand (the rule of --stale and `check`: gate file, helpers, target source, fixtures
and edits hash as recorded), and only the gates the perturbation lists, and the covering gates
whose records are not current, run. A listed gate always runs: it is what the perturbation shows.
"""
from __future__ import annotations

import json
import shutil

import pytest

from fidelity.evidence import jsonio, paths
from fidelity.evidence.outcome import Outcome
from fidelity.perturb import run

from .conftest import ARITH, GATE_ADD, GATE_FOUR, GATE_NEG, GATE_SCALE, SPLIT, make_toy_repo

PATHS = [ARITH, SPLIT]
P_ADD = {"id": "P_add", "target": "toysubj.arith", "edits": [{"find": "return a + b", "replace": "return a - b"}],
         "gates": [GATE_ADD]}
# the listed gate survives (a miss), and a covering gate raises: red for another reason
P_SCALE_RAISES = {"id": "P_scale_raises", "target": "toysubj.arith",
                  "edits": [{"find": "return 2.0 * x", "replace": "raise RuntimeError('no scale')"}],
                  "gates": [GATE_ADD]}
COVERING = {GATE_SCALE, GATE_NEG, GATE_FOUR}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A toy repo after one full run of P_add and P_scale_raises: every gate's record written."""
    repo = make_toy_repo(tmp_path_factory.mktemp("covering") / "repo")
    first = run([P_ADD, P_SCALE_RAISES], test_paths=PATHS, repo_root=repo, jobs=2, timeout_s=60)
    assert {o.gate for o in first.perturbations[0].outcomes} == COVERING | {GATE_ADD}
    assert not any(o.kept for p in first.perturbations for o in p.outcomes)
    return repo


@pytest.fixture
def repo(recorded, tmp_path):
    return shutil.copytree(recorded, tmp_path / "repo")


def _again(repo, *perts, **options):
    result = run(list(perts or [P_ADD]), test_paths=PATHS, repo_root=repo, jobs=2, timeout_s=60, **options)
    return result, result.perturbations[0]


def _record_bytes(repo, pid, gate) -> str:
    """The record of `gate` as its perturbation's one file holds it (the file holds all of its gates)."""
    held = json.loads(paths.record_file(repo / "reports" / "evidence", pid).read_text(encoding="utf-8"))
    return jsonio.dumps(held["records"][gate])


def test_covering_gates_with_current_records_are_not_run_again_and_their_records_stand(repo):
    """...while the listed gate runs although its record is current too."""
    before = {g: _record_bytes(repo, "P_add", g) for g in COVERING}
    result, p_add = _again(repo)
    assert result.ok
    assert p_add.gates == [GATE_ADD]  # what the perturbation's child was given to run
    kept = {o.gate: o for o in p_add.outcomes if o.kept}
    assert set(kept) == COVERING and p_add.kept_covering == 3
    assert kept[GATE_FOUR].outcome == Outcome.RED_BY_ASSERTION and kept[GATE_FOUR].reading == 4.0  # as recorded
    assert {g: _record_bytes(repo, "P_add", g) for g in COVERING} == before
    assert "3 covering gates from current records" in p_add.summary()
    assert "record current, not re-run" in result.table()
    add = next(o for o in p_add.outcomes if o.gate == GATE_ADD)
    assert not add.kept and add.outcome == Outcome.RED_BY_ASSERTION and add.instances


def test_editing_a_covering_gates_file_runs_that_gate_again(repo):
    with open(repo / SPLIT, "a") as f:
        f.write("\nEDITED = 1\n")
    _, p_add = _again(repo)
    assert p_add.gates == [GATE_ADD, GATE_FOUR]
    assert {o.gate for o in p_add.outcomes if o.kept} == {GATE_SCALE, GATE_NEG}


def test_editing_the_target_runs_every_gate_again(repo):
    with open(repo / "toysubj" / "arith.py", "a") as f:
        f.write("\nEDITED = 1\n")
    _, p_add = _again(repo)
    assert set(p_add.gates) == COVERING | {GATE_ADD} and not any(o.kept for o in p_add.outcomes)


def test_a_covering_gate_that_raised_is_run_again(repo):
    """Red for another reason (an exception, a timeout, a crash) may belong to the machine: not kept."""
    result, p = _again(repo, P_SCALE_RAISES)
    assert GATE_SCALE in p.gates
    scale = next(o for o in p.outcomes if o.gate == GATE_SCALE)
    assert not scale.kept and scale.outcome == Outcome.RED_OTHER
    assert {o.gate for o in p.outcomes if o.kept} == {GATE_NEG, GATE_FOUR}


def test_rerun_covering_runs_every_gate(repo):
    _, p_add = _again(repo, reuse_covering=False)
    assert set(p_add.gates) == COVERING | {GATE_ADD} and not any(o.kept for o in p_add.outcomes)


def test_an_observation_runs_every_covering_gate(repo):
    result = run([P_ADD], test_paths=PATHS, repo_root=repo, jobs=2, timeout_s=60, observe=True)
    assert set(result.perturbations[0].gates) == COVERING | {GATE_ADD}


def test_a_gate_whose_listing_changed_runs_again(repo):
    """Listed now but covering in its record, or covering now but listed in its record: the record says
    the other thing, so the gate runs and its record is written anew."""
    _, p = _again(repo, dict(P_ADD, gates=[GATE_FOUR]))
    assert p.gates == [GATE_ADD, GATE_FOUR]
    assert {o.gate for o in p.outcomes if o.kept} == {GATE_SCALE, GATE_NEG}
