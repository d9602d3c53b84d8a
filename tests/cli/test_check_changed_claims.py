"""`check --changed` reads the verdicts of the last clean claims stage of the same inputs instead of computing
every claim's oracle again (fidelity/check/kept_claims_check.py); a plain check always computes them; an edit
to a spec, an oracle module it had imported or a numeric package's version makes --changed compute them; a
comment does not; a stage with an error, or rows JSON would not give back as they are, is never kept."""
from __future__ import annotations

import math

import pytest

from fidelity import claims
from fidelity.check import claims_stage, kept_claims_check
from kept_stage import stage_on_this_project, toy_inputs

ROWS = [{"id": "p.claim1", "verdict": "confirmed", "stated": 0.5, "computed": 0.5, "note": ""},
        {"id": "p.claim2", "verdict": "refuted", "stated": 2.0, "computed": 3.0, "note": ""}]


@pytest.fixture
def stage(tmp_path, monkeypatch):
    """The stage on this project, its cache in tmp_path; `computed` counts the real computations."""
    computed, rows = [], [dict(r) for r in ROWS]
    monkeypatch.setattr(claims, "check_claims", lambda cat: computed.append(1) or rows)
    return stage_on_this_project(claims_stage, tmp_path, monkeypatch)[0], computed, rows


def test_changed_reads_the_verdicts_of_a_clean_claims_stage_and_plain_check_always_computes_them(stage):
    run, computed, _ = stage
    assert run(changed=True)["kept"] is False and len(computed) == 1
    assert run(changed=True) == {"stage": "claims", "ok": True, "claims": ROWS, "kept": True}
    assert len(computed) == 1                                        # read, not computed
    assert run(changed=False)["kept"] is False and len(computed) == 2


@pytest.mark.parametrize("row", [{"verdict": "error", "note": "the oracle raised"}, {"computed": math.nan},
                                 {"computed": (1.0, 2.0)}], ids=["an error", "a NaN", "a tuple"])
def test_a_stage_with_an_error_or_a_value_json_would_change_is_not_kept(stage, row):
    run, computed, rows = stage
    rows[0].update(row)
    run(changed=False)
    assert run(changed=True)["kept"] is False and len(computed) == 2


@pytest.mark.parametrize("edited", ["spec", "module", "version"])
def test_an_edit_to_anything_the_claims_read_makes_changed_compute_them(edited, tmp_path, monkeypatch):
    root, spec, oracle = toy_inputs(tmp_path, monkeypatch, f"oracle_of_the_toy_{edited}")
    kept_claims_check.save(root, [spec], ROWS)
    assert kept_claims_check.rows(root, [spec]) == ROWS
    path = spec if edited == "spec" else oracle
    path.write_text("# a comment\n" + path.read_text())                  # means nothing (source_meaning.py)
    assert kept_claims_check.rows(root, [spec]) == ROWS
    if edited == "version":
        monkeypatch.setattr(kept_claims_check, "oracle_versions", lambda: ["python 3.11.7", "sympy 0.0-other"])
    else:
        path.write_text(path.read_text() + ("year: 2026\n" if edited == "spec" else "OTHER = 2\n"))
    assert kept_claims_check.rows(root, [spec]) is None
