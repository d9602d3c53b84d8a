"""What the tests of check's kept stages (fixtures, claims, code: fidelity/check/kept_*_check.py) share."""
from __future__ import annotations

import importlib
import sys
from argparse import Namespace
from pathlib import Path

from fidelity import project
from fidelity.spec import load_catalogue


def stage_on_this_project(stage_module, tmp_path: Path, monkeypatch):
    """(run(changed) -> the stage's result, the project): the check stage `stage_module` on this project,
    its cache in tmp_path (the caller patches the stage's own work to count it)."""
    monkeypatch.setenv("FIDELITY_CACHE_DIR", str(tmp_path / "cache"))
    here = project.find(__file__).activate()
    cat = load_catalogue(here.specs)
    return (lambda changed: stage_module.run(cat, Namespace(changed=changed), lambda *said: None)), here


def toy_inputs(tmp_path: Path, monkeypatch, module: str) -> tuple[Path, Path, Path]:
    """(root, its spec file, the source of `module`): a project with one spec and one module, the module
    imported as a stage would have imported it; the cache in tmp_path. `module`: a name of its own, so no
    module cached by another test is taken for it."""
    monkeypatch.setenv("FIDELITY_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "proj"
    (root / "specs").mkdir(parents=True)
    spec, source = root / "specs" / "s.yaml", root / f"{module}.py"
    spec.write_text("paper: p\n")
    source.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setitem(sys.modules, module, importlib.import_module(module))
    return root, spec, source
