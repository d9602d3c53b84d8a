"""Evidence keys by meaning (fidelity/source_meaning.py): a comment, a docstring or a reformatting of a
target, gate file or conftest leaves every record current; an edit that changes the program, or makes a
perturbation's find/replace land elsewhere, does not."""
from __future__ import annotations

import shutil

import pytest

from fidelity.evidence import store
from fidelity.evidence.paths import evidence_root
from comment_edit import commented_and_redocumented
from fidelity.evidence.staleness import staleness

from .conftest import ARITH, toy_perturbations


def _copy(main_run, tmp_path):
    dest = tmp_path / "copy"
    shutil.copytree(main_run.repo, dest)
    return dest


def _stale_reasons(repo) -> dict[str, list[str]]:
    """perturbation id -> every reason any of its records is stale (judged with its perturbation, as check does)."""
    perts = {p["id"]: p for p in toy_perturbations()}
    reasons: dict[str, list[str]] = {}
    for rec in store.load_all(evidence_root(repo / "reports")):
        reasons.setdefault(rec.perturbation, []).extend(staleness(rec, repo, perts[rec.perturbation]))
    return reasons


@pytest.mark.parametrize("edited", ["toysubj/arith.py", ARITH, "tests/conftest.py"])
def test_a_comment_or_docstring_edit_leaves_every_record_current(main_run, tmp_path, edited):
    repo = _copy(main_run, tmp_path)
    path = repo / edited
    path.write_text(commented_and_redocumented(path.read_text()))
    reasons = _stale_reasons(repo)
    assert reasons and all(r == [] for r in reasons.values()), reasons


def test_a_code_edit_to_the_target_makes_its_records_stale(main_run, tmp_path):
    repo = _copy(main_run, tmp_path)
    target = repo / "toysubj" / "arith.py"
    target.write_text(target.read_text() + "\nEDITED = 1\n")
    reasons = _stale_reasons(repo)
    assert all("target source toysubj.arith changed" in r for r in reasons.values()), reasons


def test_a_reformatting_that_moves_the_find_text_into_a_comment_makes_the_record_stale(main_run, tmp_path):
    """`return a + b` reformatted, and the old text kept in a comment: the target means the same, but P_add's
    find now matches the comment, so its edit would perturb nothing. Its record is not read back."""
    repo = _copy(main_run, tmp_path)
    target = repo / "toysubj" / "arith.py"
    target.write_text(target.read_text().replace("    return a + b", "    return a+b  # was: return a + b"))
    reasons = _stale_reasons(repo)
    assert set(reasons["P_add"]) == {"the perturbation's edits applied to toysubj.arith now give another program"}
    assert reasons["P_exc"] == []


def test_a_reformatting_the_find_text_no_longer_matches_says_the_edits_no_longer_apply(main_run, tmp_path):
    repo = _copy(main_run, tmp_path)
    target = repo / "toysubj" / "arith.py"
    target.write_text(target.read_text().replace("    return a + b", "    return (a\n            + b)"))
    reasons = _stale_reasons(repo)
    assert reasons["P_add"] and all(r.startswith("the perturbation's edits no longer apply to toysubj.arith:")
                                    and "matches nothing" in r for r in reasons["P_add"]), reasons["P_add"]
    assert reasons["P_exc"] == []
