"""`check --changed` reads the last clean code stage of the same inputs instead of importing every subject
again (fidelity/check/kept_code_check.py); a plain check always runs it; an edit to anything it read (a spec,
the project's configuration, a module it had imported, an installed version, a FIDELITY_ setting) makes
--changed run it; a comment does not (keys by meaning); a stage with a problem is never kept."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from fidelity.check import code_stage, kept_code_check
from kept_stage import stage_on_this_project, toy_inputs


@pytest.fixture
def stage(tmp_path, monkeypatch):
    """The stage on this project, its cache in tmp_path; `ran` counts the real runs."""
    ran, problems = [], []
    monkeypatch.setattr(code_stage, "_problems", lambda cat: ran.append(1) or list(problems))
    return stage_on_this_project(code_stage, tmp_path, monkeypatch)[0], ran, problems


def test_changed_reads_a_clean_code_stage_of_the_same_inputs_and_plain_check_always_runs_it(stage):
    run, ran, _ = stage
    assert run(changed=True)["kept"] is False and len(ran) == 1     # nothing kept yet: run
    assert run(changed=True) == {"stage": "code", "ok": True, "problems": [], "kept": True}
    assert len(ran) == 1                                            # read, not run
    assert run(changed=False)["kept"] is False and len(ran) == 2    # plain check: always runs


def test_a_code_stage_with_a_problem_is_not_kept(stage):
    run, ran, problems = stage
    problems.append({"equation": "x.eq1", "where": "specs/x.yaml:1", "code": "nope:X", "problem": "does not import"})
    assert run(changed=False)["ok"] is False
    assert run(changed=True)["ok"] is False and len(ran) == 2       # run again, red again


@pytest.mark.parametrize("edited", ["spec", "config", "module", "version", "setting"])
def test_an_edit_to_anything_the_code_stage_read_makes_changed_run_it(edited, tmp_path, monkeypatch):
    root, spec, subject = toy_inputs(tmp_path, monkeypatch, f"subject_of_the_toy_{edited}")
    config = root / "pyproject.toml"
    config.write_text("[tool.fidelity]\nsubjects = {}\n")
    kept_code_check.save(root, [spec], config)
    assert kept_code_check.unchanged(root, [spec], config)
    if edited in ("spec", "module"):  # a comment means nothing: keys by meaning (source_meaning.py)
        path = spec if edited == "spec" else subject
        path.write_text("# a comment\n" + path.read_text())
        assert kept_code_check.unchanged(root, [spec], config)
    if edited == "spec":
        spec.write_text(spec.read_text() + "year: 2026\n")
    elif edited == "config":
        config.write_text(config.read_text() + "mechanisms = []\n")
    elif edited == "module":
        subject.write_text("VALUE = 2\n")
    elif edited == "version":
        real = list(kept_code_check.metadata.distributions())
        moved = SimpleNamespace(metadata={"Name": real[0].metadata["Name"]}, version=real[0].version + ".post1")
        monkeypatch.setattr(kept_code_check.metadata, "distributions", lambda: [moved, *real[1:]])
    else:
        monkeypatch.setenv("FIDELITY_SUBJECT_OF_THE_TOY", "pkg:Subject")
    assert not kept_code_check.unchanged(root, [spec], config)
