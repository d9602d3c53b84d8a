"""The helpers an evidence record hashes for its gate (fidelity.evidence.gate_helpers): the conftests
above the gate, the modules it imports from beside it (and those they import), and the gate library
modules it imports, named by module; nothing else it imports, and no prose that reads like an import."""
from pathlib import Path

from fidelity.evidence.gate_helpers import GateHelpers
from fidelity.evidence.staleness import _helper_staleness
from fidelity.targets import locate

REPO = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.fidelity]\n")
    gates = tmp_path / "tests" / "gates"
    gates.mkdir(parents=True)
    (tmp_path / "tests" / "conftest.py").write_text("import os\n")
    (gates / "point.py").write_text("from shared import build\n")
    (gates / "shared.py").write_text("def build():\n    return 1\n")
    (gates / "unused_helper.py").write_text("X = 1\n")
    (tmp_path / "tests" / "toplevel.py").write_text("Y = 2\n")
    (gates / "test_thing.py").write_text(
        '"""A gate.\n\nfrom the input in both, nothing is imported by this line of prose\n"""\n'
        "import torch\n"
        "from fidelity.gates.compare import (Tolerance,\n    assert_close)\n"
        "from point import build\n"
        "import toplevel\n\n\n"
        "def test_it():\n    from fidelity.gates import readings\n    readings.record(build())\n")
    return tmp_path


def test_a_gate_names_its_conftest_its_local_helpers_through_each_other_and_the_library_it_imports(tmp_path):
    root = _project(tmp_path)
    found = GateHelpers(root, locate.child_search_path(str(root))).of("tests/gates/test_thing.py")
    local = {k for k in found if not k.startswith("fidelity.")}
    assert local == {"tests/conftest.py", "tests/gates/point.py", "tests/gates/shared.py", "tests/toplevel.py"}
    # the library by module name (the same in a checkout and an install), with what it imports of itself
    assert {"fidelity.gates.compare", "fidelity.gates.readings", "fidelity.gates"} <= set(found)
    assert all(k.startswith("fidelity.gates") for k in set(found) - local)
    assert "tests/gates/unused_helper.py" not in found and "torch" not in found


def test_this_projects_stack_gate_holds_its_shared_body_and_attribution():
    found = GateHelpers(REPO, locate.child_search_path(str(REPO))).of("tests/gates/test_hc_stack.py")
    assert {"tests/conftest.py", "tests/gates/residual_stack.py", "fidelity.gates.attribution"} <= set(found)


def test_a_helper_changed_added_or_dropped_is_named_and_a_record_without_helpers_is_stale():
    recorded = {"a.py": "1", "fidelity.gates.compare": "2", "gone.py": "3"}
    now = {"a.py": "1", "fidelity.gates.compare": "9", "new.py": "4"}
    assert _helper_staleness(recorded, now) == ["gate helper fidelity.gates.compare changed",
                                                "the gate no longer imports gone.py", "the gate now imports new.py"]
    assert _helper_staleness(dict(now), now) == []
    assert _helper_staleness(None, now) == ["gate helpers: no hash recorded"]
