"""A unit's trip to a Ray worker, without a cluster: the driver's paths mapped to the worker's and back,
and what comes back refused when the worker's versions are not the driver's."""
from __future__ import annotations

import json

from fidelity.perturb import executor as executor_mod
from fidelity.perturb import launch, ray_task

MAPPING = {"/driver/project": "/worker/copy", "/driver/project/.venv/lib/site": "/worker/site",
           "/driver/scratch": "/worker/scratch"}


def test_every_path_under_a_mapped_folder_moves_and_nothing_else_does():
    job = {"rootdir": "/driver/project", "fixtures_dir": "/driver/project/fixtures",
           "args": ["tests/gates/test_a.py::test_b", "/driver/project/tests/x.py"],
           "patch": {"path": "/driver/project/.venv/lib/site/pkg/mod.py", "module": "pkg.mod",
                     "source": "ROOT = '/driver/project'\n"},
           "mutants": [{"results": "/driver/scratch/batch-results/m1.json"}],
           "lines_executed": {"/driver/project/pkg/mod.py": [3, 4]},
           "env": {"OTHER": "/driver/projectile"}}
    moved = ray_task.relocate(job, MAPPING)
    assert moved["rootdir"] == "/worker/copy" and moved["fixtures_dir"] == "/worker/copy/fixtures"
    assert moved["args"] == ["tests/gates/test_a.py::test_b", "/worker/copy/tests/x.py"]
    assert moved["patch"]["path"] == "/worker/site/pkg/mod.py"  # the longest folder first
    assert moved["patch"]["source"] == "ROOT = '/driver/project'\n"  # code is never rewritten
    assert moved["mutants"][0]["results"] == "/worker/scratch/batch-results/m1.json"
    assert moved["lines_executed"] == {"/worker/copy/pkg/mod.py": [3, 4]}  # keys too
    assert moved["env"] == {"OTHER": "/driver/projectile"}  # a longer name is not under the folder
    back = ray_task.relocate(moved, {new: old for old, new in MAPPING.items()})
    assert back == job


def _unit_and_place(tmp_path):
    unit = executor_mod.Unit(label="perturbation-P1", job={}, timeout_s=5)
    return unit, executor_mod.Place(root=tmp_path, workdir=str(tmp_path / "scratch"), pythonpath=(), env={})


def test_what_comes_back_lands_where_a_local_child_leaves_it(tmp_path):
    unit, place = _unit_and_place(tmp_path)
    results = {"format": 1, "items": [{"nodeid": "t.py::test_a", "gate": "t.py::test_a", "outcome": "passed"}]}
    back = {"returncode": 0, "timed_out": False, "wall_s": 1.5, "output_tail": "", "start": "warm",
            "versions": ray_task.versions(), "files": {"perturbation-P1/results.json": json.dumps(results).encode()}}
    child = ray_task.receive(back, unit, place, ray_task.versions())
    assert launch.results_path(place.workdir, unit.label).exists()
    assert child.status == "ok" and child.items == results["items"] and child.start == "ray warm"


def test_a_worker_with_other_versions_than_the_driver_loses_its_unit(tmp_path):
    unit, place = _unit_and_place(tmp_path)
    driver = ray_task.versions()
    back = {"returncode": 0, "timed_out": False, "wall_s": 1.0, "output_tail": "", "start": "warm",
            "versions": dict(driver, torch="0.0.1"), "files": {"perturbation-P1/results.json": b"{}"}}
    child = ray_task.receive(back, unit, place, driver)
    assert child.status == "lost"
    assert child.lost.endswith(f"torch 0.0.1 (driver: {driver['torch']})")
    assert not launch.results_path(place.workdir, unit.label).exists()  # nothing it sent is read
