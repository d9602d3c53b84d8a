"""patching + locate: edits must match exactly once; targets are found without importing."""
from __future__ import annotations

import sys

import pytest

from fidelity.targets import patching
from fidelity.targets.errors import PatchError, TargetNotFound
from fidelity.targets.locate import find_source

from .conftest import TEST_PATHS, make_toy_repo

SOURCE = "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x + 1\n"


def test_single_match_is_applied_and_diffed():
    out = patching.apply_edits(SOURCE, [{"find": "def f(x):\n    return x + 1", "replace": "def f(x):\n    return x - 1"}],
                               perturbation_id="P9", file="pkg/mod.py")
    assert out == SOURCE.replace("return x + 1", "return x - 1", 1)
    diff = patching.unified_diff(SOURCE, out, "pkg/mod.py")
    assert diff.startswith("--- a/pkg/mod.py\n+++ b/pkg/mod.py\n")
    assert "-    return x + 1\n+    return x - 1\n" in diff


def test_zero_matches_is_an_error_naming_perturbation_file_and_pattern():
    with pytest.raises(PatchError) as e:
        patching.apply_edits(SOURCE, [{"find": "return x * 2", "replace": "y"}], perturbation_id="P7", file="pkg/mod.py")
    msg = str(e.value)
    assert "P7" in msg and "pkg/mod.py" in msg and "return x * 2" in msg and "matches nothing" in msg
    assert (e.value.perturbation_id, e.value.file, e.value.pattern, e.value.count) == ("P7", "pkg/mod.py", "return x * 2", 0)


def test_several_matches_is_an_error_with_the_count():
    with pytest.raises(PatchError) as e:
        patching.apply_edits(SOURCE, [{"find": "return x + 1", "replace": "return x"}], perturbation_id="P8", file="pkg/mod.py")
    msg = str(e.value)
    assert "P8" in msg and "pkg/mod.py" in msg and "return x + 1" in msg and "matches 2 places" in msg
    assert e.value.count == 2


def test_overlapping_matches_count():
    assert patching.count_occurrences("aaa", "aa") == 2
    with pytest.raises(PatchError, match="matches 2 places"):
        patching.apply_edits("aaa", [{"find": "aa", "replace": "b"}], perturbation_id="P", file="f.py")


def test_later_edits_see_earlier_ones_and_a_noop_patch_is_an_error():
    out = patching.apply_edits("a = 1\n", [{"find": "a = 1", "replace": "a = 2"}, {"find": "a = 2", "replace": "a = 3"}],
                               perturbation_id="P", file="f.py")
    assert out == "a = 3\n"
    with pytest.raises(PatchError, match="unchanged"):
        patching.apply_edits("a = 1\n", [{"find": "a = 1", "replace": "a = 1"}], perturbation_id="P", file="f.py")
    with pytest.raises(PatchError, match="no edits"):
        patching.apply_edits("a = 1\n", [], perturbation_id="P", file="f.py")


def test_find_source_does_not_import(tmp_path):
    repo = make_toy_repo(tmp_path / "repo")
    path = find_source("toysubj.arith", [str(repo)])
    assert path == str(repo / "toysubj" / "arith.py")
    assert "toysubj" not in sys.modules and "toysubj.arith" not in sys.modules
    with pytest.raises(TargetNotFound, match="toysubj.nothing"):
        find_source("toysubj.nothing", [str(repo)])
    with pytest.raises(TargetNotFound):
        find_source("toysubj.arith.deeper", [str(repo)])


def test_run_refuses_bad_patches_and_missing_targets_before_any_child(tmp_path):
    from fidelity.perturb import runner

    repo = make_toy_repo(tmp_path / "repo")
    events = []
    bad = {"id": "PX", "target": "toysubj.arith", "file": "specs/x.yaml", "edits": [{"find": "return", "replace": "yield"}]}
    with pytest.raises(PatchError) as e:
        runner.run([bad], test_paths=TEST_PATHS, repo_root=repo, progress=events.append)
    assert "PX" in str(e.value) and "toysubj/arith.py" in str(e.value) and "'return'" in str(e.value)
    missing = {"id": "PY", "target": "toysubj.nowhere", "edits": [{"find": "a", "replace": "b"}]}
    with pytest.raises(TargetNotFound, match="PY.*toysubj.nowhere"):
        runner.run([missing], test_paths=TEST_PATHS, repo_root=repo, progress=events.append)
    assert events == []  # nothing was started, not even the gate index
    assert not (repo / "reports").exists()
