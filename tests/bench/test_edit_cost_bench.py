"""The pieces of fidelity.bench.edit_cost_bench that can be checked without the whole benchmark (which runs
`fidelity check` twice and `perturb --stale` in a copy of the project: minutes).

The edits are checked on the shipped file against the key they are meant to test (fidelity.source_meaning):
the comment edit changes the bytes and not the meaning, the code edit changes the meaning."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from fidelity import project
from fidelity.bench import edit_cost_bench as bench
from fidelity.source_meaning import meaning_sha256


@pytest.fixture
def edited(tmp_path):
    path = tmp_path / "hyper_connections.py"
    shutil.copy(project.find().root / bench.EDITED_FILE, path)
    return path


def test_the_comment_edit_changes_bytes_not_meaning_and_the_code_edit_changes_meaning(edited):
    shipped_bytes, shipped_meaning = edited.read_bytes(), meaning_sha256(edited)
    bench.edit_comment(edited)
    assert edited.read_bytes() != shipped_bytes and bench.COMMENT_LINE in edited.read_text()
    assert bench.DOCSTRING_NEW in edited.read_text() and bench.DOCSTRING_OLD not in edited.read_text()
    assert meaning_sha256(edited) == shipped_meaning
    bench.edit_code(edited)
    assert meaning_sha256(edited) != shipped_meaning
    compile(edited.read_text(), str(edited), "exec")  # still a module


def test_the_gate_files_comment_edit_changes_bytes_not_meaning(tmp_path):
    gate = tmp_path / "gate.py"
    shutil.copy(project.find().root / bench.EDITED_GATE_FILE, gate)
    shipped_bytes, shipped_meaning = gate.read_bytes(), meaning_sha256(gate)
    bench.edit_gate_comment(gate)
    assert gate.read_bytes() != shipped_bytes and meaning_sha256(gate) == shipped_meaning


def test_the_function_edit_changes_one_body_and_nothing_run_at_import(edited):
    from fidelity.function_meaning import function_keys

    before = function_keys(edited)
    bench.edit_function(edited)
    after = function_keys(edited)
    assert after.skeleton == before.skeleton
    assert {u for u in before.units if before.units[u] != after.units[u]} == {"HyperConnection.readout"}


def test_an_edit_whose_anchor_is_gone_says_so(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    with pytest.raises(bench.BenchFailed, match="DOCSTRING_OLD"):
        bench.edit_comment(path)
    with pytest.raises(bench.BenchFailed, match="no top-level class"):
        bench.edit_code(path)
    with pytest.raises(bench.BenchFailed, match="FUNCTION_OLD"):
        bench.edit_function(path)


def test_files_rewritten_counts_changed_added_and_removed_files_only(tmp_path):
    for name in ("same.json", "changed.json", "removed.json"):
        (tmp_path / name).write_text(name)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "same.json").write_text("kept")
    before = bench.snapshot(tmp_path)
    (tmp_path / "changed.json").write_text("new bytes")
    (tmp_path / "same.json").write_text("same.json")  # written again, same bytes: not rewritten
    (tmp_path / "removed.json").unlink()
    (tmp_path / "sub" / "added.json").write_text("added")
    assert bench.files_rewritten(before, bench.snapshot(tmp_path)) == 3
    assert bench.files_rewritten(before, before) == 0


def test_every_status_but_current_counts_as_rerun():
    out = {"perturbations": [{"status": "current"}, {"status": "caught"}, {"status": "survived"}, {"status": "current"}]}
    assert bench.perturbations_rerun(out) == 2


def test_the_copy_is_the_committed_tree_without_uncommitted_edits(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    (repo / "kept.txt").write_text("committed")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "kept.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    (repo / "kept.txt").write_text("edited, not committed")
    (repo / "untracked.txt").write_text("untracked")
    copy = bench.copy_committed(repo, tmp_path / "copy")
    assert (copy / "kept.txt").read_text() == "committed" and not (copy / "untracked.txt").exists()


def test_a_folder_that_is_no_git_checkout_is_refused_with_what_to_do(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(bench.BenchFailed, match="run the bench from a git checkout"):
        bench.copy_committed(tmp_path / "plain", tmp_path / "copy")


def _step(wall_s, **counts):
    return {"command": "cmd", "wall_s": wall_s, "returncode": 0, "counts": counts}


def test_bench_all_holds_the_code_and_function_edits_to_four_times_the_floor_the_comment_edit_to_twice_and_says_each_edits_counts(monkeypatch):
    from fidelity.bench import all as bench_all

    measured = {"floor_s": 1.0, "check": _step(90.0), "load_average_before": "n/a",  # as measure gives them
                "comment_perturb_stale": _step(3.0, perturbations=221, rerun=0, reports_files_rewritten=0),
                "comment_check_changed": _step(4.0, instances_run=0, instances_kept=3274),
                "code_check_changed": _step(17.0, instances_run=880, instances_kept=2394),
                "function_check_changed": _step(4.5, instances_run=12, instances_kept=3262)}
    monkeypatch.setattr(bench_all.edit_cost_bench, "measure", lambda root, say, floor: measured)
    stale, comment, code, function = bench_all._edit_figures(1.25, None, print)
    assert [f["name"] for f in (stale, comment, code, function)] == [
        "perturb_stale_comment", "check_changed_comment", "check_changed", "check_changed_function"]
    assert "12 of 3274 instances run" in function["command"] and function["target_ratio_to_floor"] == 4.0
    assert "0 of 221 re-run, 0 files under reports/ rewritten" in stale["command"]
    assert "0 of 3274 instances run" in comment["command"] and "880 of 3274 instances run" in code["command"]
    assert (code["ratio_to_floor"], code["target_ratio_to_floor"], code["met_ratio_to_floor"]) == (13.6, 4.0, False)
    assert (comment["ratio_to_floor"], comment["target_ratio_to_floor"], comment["met_ratio_to_floor"]) == (3.2, 2.0, False)
    assert code["peer"]["seconds"] == 90.0


def test_red_stages_are_the_stages_not_ok():
    stages = [{"stage": "specs", "ok": True}, {"stage": "gates", "ok": True}, {"stage": "evidence", "ok": False}]
    assert bench.red_stages(stages) == ["evidence"]
