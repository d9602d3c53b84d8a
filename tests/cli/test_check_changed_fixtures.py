"""`check --changed` reads the last clean fixture verification of the same inputs instead of recomputing
every oracle (fidelity/check/kept_fixture_check.py); a plain check always recomputes; an edit to any
input (a fixture file, a spec, a module the verification had loaded) makes --changed recompute; a
verification that drifted is never kept."""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

from fidelity import cache, project
from fidelity.check import fixtures_stage, kept_fixture_check, kept_verdict
from fidelity.fixtures import store
from kept_stage import stage_on_this_project, toy_inputs


@pytest.fixture
def stage(tmp_path, monkeypatch):
    """The stage on this project, its cache in tmp_path; `verified` counts the real recomputations."""
    verified = []
    monkeypatch.setattr(store, "verify", lambda directory: verified.append(directory) or [])
    monkeypatch.setattr(fixtures_stage, "_stale_predictions", lambda cat, directory: [])
    run, here = stage_on_this_project(fixtures_stage, tmp_path, monkeypatch)
    return run, verified, here


def test_changed_reads_a_clean_verification_of_the_same_inputs_and_plain_check_always_recomputes(stage):
    run, verified, _ = stage
    assert run(changed=True)["kept"] is False and len(verified) == 1     # nothing kept yet: recomputed
    assert run(changed=True) == {"stage": "fixtures", "ok": True, "drifts": [], "kept": True}
    assert len(verified) == 1                                             # read, not recomputed
    assert run(changed=False)["kept"] is False and len(verified) == 2     # plain check: always recomputes


def test_a_verification_that_drifted_is_not_kept(stage, monkeypatch):
    run, verified, here = stage
    drift = store.Drift(Path("x.json"), "x", "expected.y", 1, 2)
    monkeypatch.setattr(store, "verify", lambda directory: verified.append(directory) or [drift])
    assert run(changed=False)["ok"] is False
    assert not (Path(cache.cache_dir(here.root)) / kept_fixture_check.FILE_NAME).exists()
    assert run(changed=True)["ok"] is False and len(verified) == 2       # recomputed, drifts again


@pytest.mark.parametrize("edited", ["fixture", "spec", "module"])
def test_an_edit_to_anything_the_verification_read_makes_changed_recompute(edited, tmp_path, monkeypatch):
    root, _, builder = toy_inputs(tmp_path, monkeypatch, f"builder_of_the_toy_{edited}")
    (root / "fixtures").mkdir()
    (root / "fixtures" / "f.json").write_text('{"id": "f"}')
    specs = [Path("specs/s.yaml")]
    kept_fixture_check.save(root, root / "fixtures", specs)
    assert kept_fixture_check.unchanged(root, root / "fixtures", specs)
    path = {"fixture": root / "fixtures" / "f.json", "spec": root / "specs" / "s.yaml",
            "module": builder}[edited]
    if edited != "fixture":  # a comment and a blank line mean nothing: keys by meaning (source_meaning.py)
        path.write_text("# a comment\n" + path.read_text() + "\n")
        assert kept_fixture_check.unchanged(root, root / "fixtures", specs)
    path.write_text(path.read_text() + {"fixture": "\n", "spec": "year: 2026\n", "module": "OTHER = 2\n"}[edited])
    assert not kept_fixture_check.unchanged(root, root / "fixtures", specs)


def test_a_package_installed_in_a_venv_inside_the_project_is_keyed_by_its_version_not_read_as_the_projects(
        tmp_path, monkeypatch):
    """A checkout's .venv lies inside the project: its packages (sympy's 420 modules) are not the project's
    builders, and keying each by meaning cost 7 s of a cold check (their versions are in the key)."""
    root = tmp_path / "proj"
    site = root / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "installed_beside_the_toy.py").write_text("X = 1\n")
    (root / "builder_of_the_toy_project.py").write_text("Y = 2\n")
    for folder, name in ((site, "installed_beside_the_toy"), (root, "builder_of_the_toy_project")):
        monkeypatch.syspath_prepend(str(folder))
        monkeypatch.setitem(sys.modules, name, importlib.import_module(name))
    monkeypatch.setattr(kept_verdict, "installation_prefixes", lambda: (os.path.join(str(site.resolve()), ""),))
    read = kept_fixture_check.modules_read(root)
    assert "builder_of_the_toy_project" in read and "installed_beside_the_toy" not in read
    assert "fidelity.check.kept_fixture_check" in read  # the fidelity package, wherever it is installed


def test_this_processes_installed_packages_are_not_among_the_modules_read():
    here = project.find(__file__)
    import sympy  # noqa: F401  (loaded, as a verification loads it)

    assert not [m for m in kept_fixture_check.modules_read(here.root.resolve()) if m.split(".")[0] in ("sympy", "torch")]
