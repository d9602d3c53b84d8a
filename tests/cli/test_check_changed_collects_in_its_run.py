"""`fidelity check --changed` with a gate index out of date (a gate file's code edited): the run collects the
suite itself and runs every instance but those whose kept results hold, new instances included, instead of
collecting the index first in a process of its own (3.5-4.5 s before the run, which collects it again)."""
import json

from toy_project import COUNTS_ITS_COLLECTIONS, fidelity, init_project

from fidelity import cache, project
from fidelity.perturb import gate_index

OTHER = '''"""Two functions, each gated on its own."""


def double(x):
    return 2 * x


def triple(x):
    return 3 * x
'''

GATES = '''import pytest

from mypaper import other


@pytest.mark.gate(equations=["mypaper.eq1"], targets=["mypaper.other"])
def test_double_of_three_is_six():
    assert other.double(3) == 6, f"double(3) = {other.double(3)}"
'''

ANOTHER_GATE = '''

@pytest.mark.gate(equations=["mypaper.eq1"], targets=["mypaper.other"])
def test_triple_of_three_is_nine():
    assert other.triple(3) == 9, f"triple(3) = {other.triple(3)}"
'''
GATE_FILE = "tests/gates/test_other.py"
NEW = f"{GATE_FILE}::test_triple_of_three_is_nine"


def _check(root, *args) -> tuple[dict, dict]:
    done = fidelity("check", "--json", *args, cwd=root)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads(done.stdout)
    return next(s for s in report["stages"] if s["stage"] == "gates"), {r["gate"]: r for r in report["gates"]}


def test_a_gate_file_edited_runs_its_instances_and_the_new_one_in_the_one_collection_of_its_run(tmp_path):
    root = init_project(tmp_path)
    (root / "mypaper" / "other.py").write_text(OTHER)
    (root / GATE_FILE).write_text(GATES + COUNTS_ITS_COLLECTIONS)
    full, _ = _check(root)
    total = full["instances_run"]
    assert full["ok"] and total > 1
    log = root / "collections.log"
    log.unlink()

    (root / GATE_FILE).write_text(GATES + COUNTS_ITS_COLLECTIONS + ANOTHER_GATE)  # code in a gate file: index out of date
    edited, rows = _check(root, "--changed")
    assert (edited["instances_run"], edited["instances_kept"]) == (2, total - 1)  # the file's instance and the new one
    assert edited["ok"] and rows[NEW]["status"] == "passed"  # a new instance is run and reported
    assert log.read_text().splitlines() == ["collected"], "the suite was collected before the run, then by it"

    again, rows_again = _check(root, "--changed")  # the run kept every instance, the new one too
    assert (again["instances_run"], again["instances_kept"]) == (0, total + 1)
    assert rows_again == rows
    # and its collection as the gate index, current for the command: nothing was collected again
    assert log.read_text().splitlines() == ["collected"], "the run's collection was not kept as the gate index"
    kept = json.loads((cache.cache_dir(root) / "gate_index.json").read_text(encoding="utf-8"))["items"]
    collected = gate_index.collect(["tests/gates"], repo_root=root, cache_dir=tmp_path / "elsewhere")  # a child's
    assert kept == collected.items and NEW in {it["nodeid"] for it in kept}
    assert rows == _check(root)[1]  # what a plain check reports, gate for gate


def test_a_run_given_pytest_options_by_the_environment_is_not_kept_as_the_gate_index(tmp_path):
    # PYTEST_ADDOPTS reaches check's gate run, never a collecting child: a run narrowed by it is no index
    import os

    import warm_cli

    root = init_project(tmp_path)
    (root / "mypaper" / "other.py").write_text(OTHER)
    (root / GATE_FILE).write_text(GATES + COUNTS_ITS_COLLECTIONS)
    env = {k: v for k, v in os.environ.items() if k != project.ROOT_ENV} | {"PYTEST_ADDOPTS": "-k double"}
    done = warm_cli.fidelity(["check", "--json"], cwd=root, env=env)
    gates = {r["gate"] for r in json.loads(done.stdout)["gates"]}
    assert gates == {f"{GATE_FILE}::test_double_of_three_is_six"}, gates  # the option narrowed the run
    # without the option: the index is not current (a narrowed one would be, and would name one gate), so the
    # run collects the suite and reports all of it
    _, rows = _check(root, "--changed")
    assert len(rows) > 1 and (root / "collections.log").read_text().splitlines() == ["collected"] * 2


def test_an_instance_given_other_targets_is_kept_under_the_key_of_its_new_targets(tmp_path):
    root = init_project(tmp_path)
    (root / "mypaper" / "other.py").write_text(OTHER)
    (root / GATE_FILE).write_text(GATES)
    _check(root)
    # the same node id, another target (one the suite targets already): its key is made anew, not reused
    (root / GATE_FILE).write_text(GATES.replace('targets=["mypaper.other"]', 'targets=["mypaper.other", "mypaper.softmax"]'))
    edited, _ = _check(root, "--changed")
    assert edited["instances_run"] == 1
    again, _ = _check(root, "--changed")
    assert again["instances_run"] == 0, "the instance was kept under the key of its old targets"
