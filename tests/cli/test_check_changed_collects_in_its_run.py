"""`fidelity check --changed` with a gate index out of date (a gate file's code edited): the run collects the
suite itself and runs every instance but those whose kept results hold, new instances included, instead of
collecting the index first in a process of its own (3.5-4.5 s before the run, which collects it again)."""
import json

from toy_project import fidelity, init_project

from fidelity import cache

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


def test_a_gate_file_edited_runs_its_instances_and_the_new_one_without_collecting_the_index_first(tmp_path):
    root = init_project(tmp_path)
    (root / "mypaper" / "other.py").write_text(OTHER)
    (root / GATE_FILE).write_text(GATES)
    full, _ = _check(root)
    total = full["instances_run"]
    assert full["ok"] and total > 1
    index = cache.cache_dir(root) / "gate_index.json"
    index.unlink(missing_ok=True)  # whatever a stage collected: from here, only a collection before the run makes one

    (root / GATE_FILE).write_text(GATES + ANOTHER_GATE)  # code in a gate file: the index is out of date
    edited, rows = _check(root, "--changed")
    assert (edited["instances_run"], edited["instances_kept"]) == (2, total - 1)  # the file's instance and the new one
    assert edited["ok"] and rows[NEW]["status"] == "passed"  # a new instance is run and reported
    assert not index.exists(), "the gate index was collected before the run"

    again, rows_again = _check(root, "--changed")  # the run kept every instance, the new one too
    assert (again["instances_run"], again["instances_kept"]) == (0, total + 1)
    assert rows_again == rows
    assert rows == _check(root)[1]  # what a plain check reports, gate for gate
