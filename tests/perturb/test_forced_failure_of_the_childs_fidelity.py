"""The forced failure is collected from the `fidelity` package a child imports.

A project that holds its own copy of the package (this repository, checked by a fidelity installed
elsewhere) has its children import that copy, since the project's root comes first on their path;
pytest refuses to collect a second file under the module name `fidelity.perturb.forced_red_gate`, so
the forced failure read "expected one result, got 0" and every `perturb` from a non-editable install
stopped, red.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import fidelity
from fidelity.perturb import run

from .conftest import ARITH, GATE_ADD, make_toy_repo

P_ADD = {"id": "P_add", "target": "toysubj.arith", "edits": [{"find": "return a + b", "replace": "return a - b"}],
         "gates": [GATE_ADD]}


def test_a_project_holding_its_own_fidelity_sees_the_forced_failure_red(tmp_path):
    repo = make_toy_repo(tmp_path / "repo")
    shutil.copytree(Path(fidelity.__file__).parent, repo / "fidelity", ignore=shutil.ignore_patterns("__pycache__"))
    result = run([P_ADD], test_paths=[ARITH], repo_root=repo, jobs=2, timeout_s=60)
    assert result.forced_failure["seen_red"], result.forced_failure["detail"]
    assert result.ok and result.perturbations[0].red_by_assertion == [GATE_ADD]
