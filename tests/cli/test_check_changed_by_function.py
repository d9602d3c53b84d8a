"""`fidelity check --changed` keys an instance's targets by the functions its process called (keys by
function, issue 54 point 2): an edit to a function no call of the instance reached keeps its result, an
edit to one that ran re-runs it (and a changed result is never read back), and anything run at import or
by every caller (a constant, a def line, a new function) re-runs every instance of the file. What an earlier
instance of the same process ran counts too, it may have left state a later one reads: heard in the run, or,
for an instance read back rather than run, what its record holds. A plain check hears the calls too: the
first `--changed` after it is as precise."""
import json
import shutil
from pathlib import Path

import pytest
from toy_project import fidelity, init_project

TWO = '''"""Two functions, each gated on its own, and a cache one gate fills and another reads."""
_TABLE = {}


def double(x):
    return 2 * x


def triple(x):
    return 3 * x


def build():
    _TABLE["scale"] = 5


def scaled(x):
    return _TABLE["scale"] * x
'''

GATES = '''import pytest

from mypaper import two


@pytest.mark.gate(equations=["mypaper.eq1"], targets=["mypaper.two"])
def test_a_double_of_three_is_six():
    assert two.double(3) == 6, f"double(3) = {two.double(3)}"


@pytest.mark.gate(equations=["mypaper.eq1"], targets=["mypaper.two"])
def test_b_triple_of_two_is_six():
    assert two.triple(2) == 6, f"triple(2) = {two.triple(2)}"


@pytest.mark.gate(equations=["mypaper.eq1"], targets=["mypaper.two"])
def test_c_the_table_is_built():
    two.build()
    assert "scale" in two._TABLE


@pytest.mark.gate(equations=["mypaper.eq1"], targets=["mypaper.two"])
def test_d_scaled_reads_what_the_build_left():
    assert two.scaled(2) == 10, f"scaled(2) = {two.scaled(2)}"  # never calls build: an earlier instance did
'''
NEVER_CALLED = '''

def never_called(x):
    return x
'''
A, B, C, D = (f"tests/gates/test_two.py::{name}" for name in (
    "test_a_double_of_three_is_six", "test_b_triple_of_two_is_six", "test_c_the_table_is_built",
    "test_d_scaled_reads_what_the_build_left"))


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """The toy project with mypaper/two.py and its gates, after a plain check (which hears the calls)."""
    root = init_project(tmp_path_factory.mktemp("traced"))
    (root / "mypaper" / "two.py").write_text(TWO + NEVER_CALLED)
    (root / "tests" / "gates" / "test_two.py").write_text(GATES)
    _full_check(root)
    return root


@pytest.fixture
def root(traced, tmp_path):
    return Path(shutil.copytree(traced, tmp_path / "mypaper"))


def _full_check(root) -> None:
    """A plain check, which keeps every instance by the functions its process called. (The evidence stage is
    red: the new gates have no record.)"""
    done = fidelity("check", "--json", cwd=root)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert next(s for s in json.loads(done.stdout)["stages"] if s["stage"] == "gates")["ok"]
    kept = json.loads((root / ".fidelity-cache" / "check-gate-run.json").read_text())["instances"]
    assert all(set(kept[n]["targets"]["mypaper.two"]) == {"skeleton", "units"} for n in (A, B, C, D))


def _edit(root, find, replace):
    path = root / "mypaper" / "two.py"
    text = path.read_text()
    assert find in text
    path.write_text(text.replace(find, replace, 1))


def _ran(root) -> set[str]:
    """Which test_two.py instances `check --changed` ran: those whose kept entry it wrote anew."""
    cache = root / ".fidelity-cache" / "check-gate-run.json"
    kept = json.loads(cache.read_text())["instances"]
    for n in (A, B, C, D):
        kept[n]["item"]["duration_s"] = -1.0  # a marker no run writes: an instance run again loses it
    cache.write_text(json.dumps({"schema": "fidelity.check-gate-run/2", "instances": kept}))
    done = fidelity("check", "--json", "--changed", cwd=root)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    after = json.loads(cache.read_text())["instances"]
    return {n for n in (A, B, C, D) if after[n]["item"]["duration_s"] != -1.0}


def _statuses(root) -> dict[str, str]:
    done = fidelity("check", "--json", "--changed", cwd=root)
    return {r["gate"].split("::")[1]: r["status"] for r in json.loads(done.stdout)["gates"]
            if r["gate"].startswith("tests/gates/test_two.py")}


def test_only_the_instances_whose_process_called_the_edited_function_run_again(root):

    _edit(root, "return 3 * x", "return x * 3")  # triple: b called it; a ran before, in the same process
    assert _ran(root) == {B, C, D}  # c and d ran after b in its process: what b left may count

    # double: a called it, and b, c and d ran after a in a whole run's process, though the run above read a back
    _edit(root, "return 2 * x", "return x * 2")
    assert _ran(root) == {A, B, C, D}


def test_an_edit_to_a_function_that_ran_earlier_in_the_process_reruns_the_instance_that_read_its_state(root):

    _edit(root, '_TABLE["scale"] = 5', '_TABLE["scale"] = 6')  # build: c called it, d only read what it left
    assert _ran(root) == {C, D}
    assert _statuses(root)["test_d_scaled_reads_what_the_build_left"] == "failed"  # never read back green


def test_an_edit_run_at_import_or_by_every_caller_reruns_every_instance_of_the_file(root):

    _edit(root, "def scaled(x):", "def unused():\n    return 0\n\n\ndef scaled(x):")  # a new function
    assert _ran(root) == {A, B, C, D}
    _edit(root, "def triple(x):", "def triple(x, y=0):")  # a def line
    assert _ran(root) == {A, B, C, D}


def test_a_comment_or_a_body_no_process_called_reruns_nothing(root):
    _edit(root, "def never_called(x):\n    return x\n", "def never_called(x):\n    return -x  # changed\n")
    assert _ran(root) == set()
