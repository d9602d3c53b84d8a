"""`fidelity check --changed` runs only the gate instances whose inputs changed since the last check, and
reads the others' results from it (issue 30: check ran the whole suite, a minute or more, for a one-line
edit). Plain check still runs every instance."""
import json

from toy_project import fidelity, init_project

OTHER = '''"""A second implementation the toy gate below targets on its own."""


def double(x):
    return 2 * x
'''

OTHER_GATE = '''import pytest

from mypaper.other import double


@pytest.mark.gate(equations=["mypaper.eq1"], targets=["mypaper.other"])
def test_double_of_three_is_six():
    assert double(3) == 6, f"double(3) = {double(3)}"
'''


def _gates(root, *args) -> dict:
    done = fidelity("check", "--json", *args, cwd=root)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads(done.stdout)
    return next(s for s in report["stages"] if s["stage"] == "gates") | {"rows": report["gates"]}


def _status(stage: dict) -> dict[str, str]:
    return {r["gate"]: r["status"] for r in stage["rows"]}


def test_check_changed_runs_only_the_instances_whose_inputs_changed(tmp_path):
    root = init_project(tmp_path)
    (root / "mypaper" / "other.py").write_text(OTHER)
    (root / "tests" / "gates" / "test_other.py").write_text(OTHER_GATE)
    full = _gates(root)
    total = full["instances_run"]
    assert full["ok"] and full["instances_kept"] == 0 and total > 1

    unchanged = _gates(root, "--changed")
    assert (unchanged["instances_run"], unchanged["instances_kept"]) == (0, total)
    assert unchanged["ok"] and _status(unchanged) == _status(full)

    (root / "mypaper" / "other.py").write_text(OTHER.replace("2 * x", "3 * x"))
    edited = _gates(root, "--changed")
    assert (edited["instances_run"], edited["instances_kept"]) == (1, total - 1)
    assert not edited["ok"]
    assert _status(edited)["tests/gates/test_other.py::test_double_of_three_is_six"] == "failed"

    again = _gates(root, "--changed")  # its inputs are those of the red run: still red, run again by nobody
    assert (again["instances_run"], again["instances_kept"]) == (0, total)
    assert _status(again) == _status(edited)


def test_check_changed_with_a_subject_is_refused(tmp_path):
    done = fidelity("check", "--changed", "--subject", "pot", cwd=init_project(tmp_path))
    assert done.returncode == 2 and "--changed" in done.stderr
