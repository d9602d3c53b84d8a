"""Shared set-up for the perturbation runner's own tests.

The toy repo (tests/perturb/toyrepo: a toy subject package, toy gates named
toygate_*.py, a fixture) is copied into a temporary directory for every use,
so runs and edits never touch the working tree. `main_run` runs the runner
once per session over the toy perturbations below; most tests read it.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

# The toy repo is copied by the tests; never collect it in place.
collect_ignore = ["toyrepo"]

TOYREPO = Path(__file__).parent / "toyrepo"
ARITH = "tests/toygate_arith.py"
GATE_ADD = f"{ARITH}::test_add_fixture"
GATE_SCALE = f"{ARITH}::test_scale"
GATE_NEG = f"{ARITH}::test_neg_is_float"
TEST_PATHS = [ARITH, "tests/toygate_clock.py", "tests/toygate_broken.py"]
SPLIT = "tests/toygate_split.py"
GATE_FOUR = f"{SPLIT}::test_four"


def make_toy_repo(dest: Path) -> Path:
    shutil.copytree(TOYREPO, dest, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "tests" / "conftest_toy.py").rename(dest / "tests" / "conftest.py")
    return dest


def toy_perturbations() -> list[dict]:
    return [
        {"id": "P_add", "title": "add subtracts", "target": "toysubj.arith", "file": "specs/toy.yaml",
         "edits": [{"find": "return a + b", "replace": "return a - b"}],
         "gates": [GATE_ADD],
         "predicted": [{"gate": GATE_ADD, "reading": 0.625, "note": "a deliberately different prediction"}]},
        {"id": "P_exc", "title": "scale raises", "target": "toysubj.arith",
         "edits": [{"find": "return 2.0 * x", "replace": "raise RuntimeError('shape mismatch: [3] vs [4]')"}],
         "gates": [GATE_SCALE]},
        {"id": "P_import", "title": "module fails to import", "target": "toysubj.arith",
         "edits": [{"find": "import math", "replace": "import math_no_such_module"}]},
        {"id": "P_subject_assert", "title": "an assert inside the subject", "target": "toysubj.arith",
         "edits": [{"find": "    return -x", "replace": "    assert x < 0, 'subject assert'\n    return -x"}]},
        {"id": "P_neg", "title": "neg is identity (weak gate)", "target": "toysubj.arith",
         "edits": [{"find": "return -x", "replace": "return x * 1.0"}],
         "gates": [GATE_NEG]},
        {"id": "P_hang", "title": "scale never returns", "target": "toysubj.arith", "timeout_s": 3,
         "edits": [{"find": "    return 2.0 * x", "replace": "    while True:\n        pass"}]},
        {"id": "P_crash", "title": "scale kills the process", "target": "toysubj.arith",
         "edits": [{"find": "    return 2.0 * x", "replace": "    import os\n    os._exit(3)"}]},
    ]


class MainRun:
    def __init__(self, repo, result, events, sources_before, sources_after):
        self.repo = repo
        self.result = result
        self.events = events
        self.sources_before = sources_before
        self.sources_after = sources_after

    def perturbation(self, pid):
        return next(p for p in self.result.perturbations if p.id == pid)

    def outcome(self, pid, gate):
        return next(o for o in self.perturbation(pid).outcomes if o.gate == gate)


def _tree_hashes(root: Path) -> dict[str, str]:
    from fidelity.evidence.jsonio import sha256_file

    return {str(p.relative_to(root)): sha256_file(p) for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and "reports" not in p.parts
            and ".fidelity-cache" not in p.parts}


@pytest.fixture(scope="session")
def main_run(tmp_path_factory) -> MainRun:
    from fidelity.perturb import run

    repo = make_toy_repo(tmp_path_factory.mktemp("main") / "repo")
    before = _tree_hashes(repo)
    events: list[dict] = []
    result = run(toy_perturbations(), test_paths=TEST_PATHS, repo_root=repo, reports_dir="reports",
                 jobs=2, timeout_s=60, progress=events.append)
    return MainRun(repo, result, events, before, _tree_hashes(repo))
