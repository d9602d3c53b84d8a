"""The runner on an executor that loses units: a lost perturbation is red for another reason and never
caught, the run finishes; a lost clean run says nothing about a gate and is run again. And the pieces
an executor is built from: which units need a GPU, the progress tally.

The losing executor is the local one with a hand on it: it hands back launch.lost_child, exactly what
the Ray executor hands back for a dead worker or a lost node (test_ray_executor.py shows that one)."""
from __future__ import annotations

import contextlib
import threading

import pytest

from fidelity.evidence.outcome import Outcome
from fidelity.perturb import executor as executor_mod
from fidelity.perturb import launch
from fidelity.perturb.gate_index import GateIndex
from fidelity.perturb.unit_tally import UnitTally

from .conftest import ARITH, GATE_ADD, GATE_SCALE, make_toy_repo, toy_perturbations

LOST = "WorkerCrashedError: the worker died unexpectedly while executing this task"


class LosingExecutor(executor_mod.LocalExecutor):
    """Runs units here, forked from a zygote of its own as the runner's default executor does, but loses
    the first try of each unit labelled in `lose` (as a dead worker would)."""

    name = "losing"

    def __init__(self, repo, lose: set[str]):
        from fidelity.perturb.runner import shared_zygote

        super().__init__(shared_zygote(repo, jobs=2), owns_zygote=True)
        self.lose, self.tries = set(lose), {}
        self._lock = threading.Lock()

    def run(self, unit, place, started=executor_mod.not_told):
        with self._lock:
            self.tries[unit.label] = self.tries.get(unit.label, 0) + 1
            lost = unit.label in self.lose and self.tries[unit.label] == 1
        if lost:
            started()
            return launch.lost_child(unit.label, LOST)
        return super().run(unit, place, started)


def test_a_lost_perturbation_is_red_for_another_reason_and_a_lost_clean_run_is_run_again(tmp_path):
    from fidelity.perturb import run

    repo = make_toy_repo(tmp_path / "repo")
    perts = [p for p in toy_perturbations() if p["id"] in ("P_add", "P_exc")]
    events: list[dict] = []
    with contextlib.closing(LosingExecutor(repo, {"perturbation-P_add", "baseline-3"})) as executor:
        result = run(perts, test_paths=[ARITH], repo_root=repo, reports_dir="reports", jobs=2, timeout_s=60,
                     executor=executor, progress=events.append)

    # the clean run lost once ran again, and the baseline was judged on all ten
    assert executor.tries["baseline-3"] == 2
    assert result.baseline["ok"] and result.baseline["clean_runs"] == 10
    assert any(e["event"] == "lost" and e["message"].startswith("baseline-3: lost by the executor") for e in events)
    # the lost perturbation: each of its gates red for another reason, naming the loss; not caught
    lost = next(p for p in result.perturbations if p.id == "P_add")
    assert executor.tries["perturbation-P_add"] == 1
    assert {o.outcome for o in lost.outcomes} == {Outcome.RED_OTHER}
    add = next(o for o in lost.outcomes if o.gate == GATE_ADD)
    assert add.detail.startswith(f"lost by the executor ({LOST})")
    assert lost.misses  # its listed gate was not seen red by assertion
    # the rest of the run went on: the other perturbation caught, everything green after
    other = next(p for p in result.perturbations if p.id == "P_exc")
    assert next(o for o in other.outcomes if o.gate == GATE_SCALE).outcome == Outcome.RED_OTHER  # P_exc raises
    assert result.green_after["not_green"] == []
    assert not result.ok  # a listed gate missed: the run says so
    # and its record says so: red for another reason, which accepts no gate
    from fidelity.evidence import store

    rec = next(r for r in store.load_all(repo / "reports" / "evidence") if r.perturbation == "P_add")
    assert rec.outcome == Outcome.RED_OTHER and rec.detail.startswith("lost by the executor")


class InterruptedExecutor(LosingExecutor):
    """The user interrupts the run while `lose`'s units run: they come back lost, as cancelled tasks do."""

    def run(self, unit, place, started=executor_mod.not_told):
        if unit.label in self.lose:
            launch.stop_all()
        return super().run(unit, place, started)


def test_a_unit_lost_because_the_run_was_interrupted_is_not_run_again(tmp_path):
    from fidelity.perturb import run

    repo = make_toy_repo(tmp_path / "repo")
    try:
        with contextlib.closing(InterruptedExecutor(repo, {"baseline-3"})) as executor, \
                pytest.raises(launch.Stopped):
            run([p for p in toy_perturbations() if p["id"] == "P_add"], test_paths=[ARITH], repo_root=repo,
                reports_dir="reports", jobs=2, timeout_s=60, executor=executor)
    finally:
        launch.resume()
    assert executor.tries["baseline-3"] == 1
    assert not list((repo / "reports").rglob("*.json"))  # no evidence from an interrupted run


def test_the_units_are_tallied_done_running_and_queued_as_they_move():
    said: list[dict] = []
    clock = iter([0.0, 0.5, 1.0, 3.0, 3.5, 4.0, 10.0]).__next__
    tally = UnitTally(said.append, "ray", every_s=2.0, clock=clock)
    tally.queue()       # t=0: the first line
    tally.queue()       # t=0.5: too soon
    tally.start()       # t=1.0: too soon
    tally.start()       # t=3.0: said
    tally.finish()      # t=3.5: too soon
    tally.finish()      # t=4.0: nothing left: always said
    assert [e["message"] for e in said] == [
        "units on the ray executor: 0 done, 0 running, 1 queued",
        "units on the ray executor: 0 done, 2 running, 0 queued",
        "units on the ray executor: 2 done, 0 running, 0 queued",
    ]
    assert said[-1]["event"] == "units" and (said[-1]["done"], said[-1]["running"], said[-1]["queued"]) == (2, 0, 0)


def test_a_busy_run_is_said_with_every_worker_running_not_in_the_gap_between_two_units():
    """Two workers, four units: a unit done while others wait is followed at once by its worker's next
    start; the line is said then, so it shows the two running, never the one left in the gap."""
    said: list[dict] = []
    clock = iter([0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 5.0, 5.0, 9.0, 9.0, 9.1]).__next__
    tally = UnitTally(said.append, "local", every_s=2.0, clock=clock)
    for _ in range(4):
        tally.queue()   # t=0: the first line; the rest too soon
    tally.start()       # t=0.1: too soon
    tally.start()       # t=0.1: too soon
    tally.finish()      # t=5: a worker freed with two queued: in the gap, not said
    tally.start()       # t=5: its next unit: said
    tally.finish()      # t=9: in the gap again
    tally.start()       # t=9: its next unit, 4 s after the last line: said
    tally.finish()      # t=9.1: nothing queued, two still running: too soon
    assert [e["message"] for e in said] == [
        "units on the local executor: 0 done, 0 running, 1 queued",
        "units on the local executor: 1 done, 2 running, 1 queued",
        "units on the local executor: 2 done, 2 running, 0 queued",
    ]


def test_a_unit_given_up_while_queued_is_done_without_having_run():
    said: list[dict] = []
    tally = UnitTally(said.append, "ray", every_s=0.0)
    tally.queue()
    tally.finish(started=False)
    assert (tally.done, tally.running, tally.queued) == (1, 0, 0)


def _index() -> GateIndex:
    item = {"file": "tests/g.py", "gate": "tests/g.py::test_x", "targets": ["pkg.mod"], "equations": []}
    return GateIndex("k", [
        dict(item, nodeid="tests/g.py::test_x[torch-cpu]", device="cpu", skip_marker=None),
        dict(item, nodeid="tests/g.py::test_x[torch-cuda]", device="cuda", skip_marker="not run: no CUDA device"),
    ])


def test_a_cuda_instance_skipped_here_runs_where_the_executor_has_gpus():
    index = _index()
    assert index.instances_covering("tests/g.py::test_x", "pkg.mod") == ["tests/g.py::test_x[torch-cpu]"]
    assert index.instances_covering("tests/g.py::test_x", "pkg.mod", cuda_elsewhere=True) == [
        "tests/g.py::test_x[torch-cpu]", "tests/g.py::test_x[torch-cuda]"]


def test_a_unit_with_a_cuda_instance_needs_a_gpu_and_one_without_does_not():
    index = _index()
    assert index.on_cuda(["tests/g.py::test_x[torch-cuda]", "tests/g.py::test_x[torch-cpu]"])
    assert not index.on_cuda(["tests/g.py::test_x[torch-cpu]"])
    assert not index.on_cuda([])


def test_a_lost_unit_reads_as_lost_and_holds_no_results():
    child = launch.lost_child("perturbation-P1", LOST)
    assert child.status == "lost" and child.results is None and child.items == []
    assert child.status_text == f"lost by the executor ({LOST})"
    assert child.to_json()["status"] == child.status_text
