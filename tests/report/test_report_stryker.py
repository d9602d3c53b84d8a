"""The mutation report follows Stryker's mutation-testing-report-schema (v2), so its viewers can open it.

MINIMAL_SCHEMA below is written from the published schema's required fields and types
(github.com/stryker-mutator/mutation-testing-elements,
packages/report-schema/src/mutation-testing-report-schema.json); no network is used.
"""
from __future__ import annotations

import jsonschema
import pytest
from ledger_toy import G_DOUBLE, G_INC

from fidelity.report import model, stryker

POSITION = {"type": "object", "required": ["line", "column"],
            "properties": {"line": {"type": "integer", "minimum": 1}, "column": {"type": "integer", "minimum": 1}}}
MINIMAL_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["schemaVersion", "thresholds", "files"],
    "properties": {
        "schemaVersion": {"type": "string", "pattern": r"^([1-2]\d*|0)(\.(([1-9]\d*)|0)){0,2}$"},
        "thresholds": {"type": "object", "required": ["high", "low"],
                       "properties": {"high": {"type": "integer", "minimum": 0, "maximum": 100},
                                      "low": {"type": "integer", "minimum": 0, "maximum": 100}}},
        "files": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["language", "source", "mutants"],
            "properties": {
                "language": {"type": "string"}, "source": {"type": "string"},
                "mutants": {"type": "array", "uniqueItems": True, "items": {
                    "type": "object", "required": ["id", "mutatorName", "location", "status"],
                    "properties": {
                        "id": {"type": "string"}, "mutatorName": {"type": "string"},
                        "replacement": {"type": "string"}, "description": {"type": "string"},
                        "statusReason": {"type": "string"}, "testsCompleted": {"type": "number"},
                        "killedBy": {"type": "array", "items": {"type": "string"}},
                        "coveredBy": {"type": "array", "items": {"type": "string"}},
                        "location": {"$ref": "#/definitions/location"},
                        "status": {"enum": ["Killed", "Survived", "NoCoverage", "CompileError", "RuntimeError",
                                            "Timeout", "Ignored", "Pending"]}}}}}}},
        "testFiles": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["tests"],
            "properties": {"source": {"type": "string"},
                           "tests": {"type": "array", "items": {"type": "object", "required": ["id", "name"],
                                                                "properties": {"id": {"type": "string"},
                                                                               "name": {"type": "string"}}}}}}},
        "framework": {"type": "object", "required": ["name"]},
    },
    "definitions": {"position": POSITION,
                    "location": {"type": "object", "required": ["start", "end"],
                                 "properties": {"start": {"$ref": "#/definitions/position"},
                                                "end": {"$ref": "#/definitions/position"}}}},
}


def report_of(toy):
    ledger = model.gather(toy.catalogue(), repo_root=toy.root, reports_dir=toy.reports, fixtures_dir=toy.fixtures)
    return stryker.build(ledger, toy.root)


def index_of(text: str, pos: dict) -> int:
    lines = text.split("\n")
    return sum(len(l) + 1 for l in lines[: pos["line"] - 1]) + pos["column"] - 1


def test_the_report_validates_against_the_published_required_fields(toy):
    toy.standard_evidence()
    report = report_of(toy)
    jsonschema.Draft7Validator.check_schema(MINIMAL_SCHEMA)
    jsonschema.Draft7Validator(MINIMAL_SCHEMA).validate(report)
    assert report["schemaVersion"] == "2"
    assert list(report["files"]) == ["toyledger_subj/arith.py"]            # keyed by the target's path
    entry = report["files"]["toyledger_subj/arith.py"]
    assert entry["language"] == "python" and entry["source"] == toy.module.read_text()
    tests = report["testFiles"]["tests/gates/test_toy.py"]["tests"]
    assert {t["id"] for t in tests} == {G_DOUBLE, G_INC}


def test_statuses_follow_the_current_evidence(toy):
    toy.standard_evidence()
    mutants = {m["id"]: m for m in report_of(toy)["files"]["toyledger_subj/arith.py"]["mutants"]}
    assert mutants["P1"]["status"] == "Killed" and mutants["P1"]["killedBy"] == [G_DOUBLE]
    assert "0.5000001" in mutants["P1"]["statusReason"]
    assert mutants["P2"]["status"] == "Survived" and mutants["P2"]["coveredBy"] == [G_INC]
    assert mutants["P3"]["status"] == "Pending" and "no current evidence" in mutants["P3"]["statusReason"]
    assert mutants["P4"]["status"] == "Pending" and "stale" in mutants["P4"]["statusReason"]
    assert mutants["P5"]["status"] == "Timeout"
    assert mutants["P1"]["description"] == "double triples (target toyledger_subj.arith; covers toy.eq1)"


def test_location_and_replacement_rebuild_the_patched_source(toy):
    from fidelity.targets.patching import apply_edits
    from ledger_toy import EDITS

    report = report_of(toy)
    source = report["files"]["toyledger_subj/arith.py"]["source"]
    for m in report["files"]["toyledger_subj/arith.py"]["mutants"]:
        start, end = index_of(source, m["location"]["start"]), index_of(source, m["location"]["end"])
        rebuilt = source[:start] + m["replacement"] + source[end:]
        assert rebuilt == apply_edits(source, EDITS[m["id"]], perturbation_id=m["id"], file="f"), m["id"]
    p1 = next(m for m in report["files"]["toyledger_subj/arith.py"]["mutants"] if m["id"] == "P1")
    assert p1["location"] == {"start": {"line": 2, "column": 5}, "end": {"line": 2, "column": 17}}
    assert p1["replacement"] == "return 3 * x"


@pytest.mark.parametrize("edits", [
    [{"find": "a = 1", "replace": "a = 2"}, {"find": "c = 3", "replace": "c = 4"}],     # two places
    [{"find": "a = 1", "replace": "a = 9"}, {"find": "a = 9\nb", "replace": "a = 8\nb"}],  # builds on the first
])
def test_span_holds_every_edit(edits):
    from fidelity.targets.patching import apply_edits

    original = "x = 0\na = 1\nb = 2\nc = 3\nd = 4\n"
    patched = apply_edits(original, edits, perturbation_id="P", file="f")
    start, end, replacement = stryker.span(original, patched, edits)
    assert original[:start] + replacement + original[end:] == patched
    assert original[:start].endswith("a = ") or original[:start] == "x = 0\n"


@pytest.mark.parametrize("original, patched, want", [
    ("x = 0\na = 1\nb = 2\n", "x = 0\na = 7\nb = 2\n", (10, 11, "7")),      # one character
    ("aaaa", "aaaaaa", (4, 4, "aa")),                                       # an insertion into a run
    ("abcabc", "abc", (3, 6, "")),                                          # a deletion
    ("same", "same", (4, 4, "")),                                           # nothing changed
    ("ab", "xy", (0, 2, "xy")),                                             # everything changed
])
def test_span_without_edits_is_the_part_between_the_common_prefix_and_suffix(original, patched, want):
    """A discovered mutant has no find/replace edits: its span is bounded by what both texts share."""
    assert stryker.span(original, patched, []) == want


def test_edits_that_no_longer_apply_are_ignored_with_the_reason(toy):
    toy.module.write_text(toy.module.read_text().replace("return x / 2", "return x * 0.5"))
    mutants = {m["id"]: m for m in report_of(toy)["files"]["toyledger_subj/arith.py"]["mutants"]}
    assert mutants["P3"]["status"] == "Ignored" and "do not apply" in mutants["P3"]["statusReason"]
    jsonschema.Draft7Validator(MINIMAL_SCHEMA).validate(report_of(toy))


def test_mutators_read_as_the_perturbations_titles_and_files_as_project_paths(toy):
    toy.standard_evidence()
    report = report_of(toy)
    mutants = {m["id"]: m for m in report["files"]["toyledger_subj/arith.py"]["mutants"]}
    assert mutants["P1"]["mutatorName"] == "P1: double triples"           # a viewer groups by this: not bare "P1"
    for path in [*report["files"], *report["testFiles"]]:
        assert not path.startswith("/") and "site-packages" not in path and ".venv" not in path, path


def _discovered(outcome, explanation=None):
    return {"outcome": outcome, "killed_by": [], "detail": "", "probes": 3, "max_difference": None,
            "witness": {"input": "f(seed 0)", "difference": 0.5, "error": None} if outcome == "blind_spot"
            else "no probe executed the mutated lines", "explanation": explanation}


@pytest.mark.parametrize("outcome", ["blind_spot", "undecided"])
def test_a_survivor_the_spec_explains_is_ignored_with_its_reason_and_an_unexplained_one_survives(outcome):
    """Issue 33: explained equivalents showed as Survived, counted against the score like an open defect."""
    why = {"kind": "equivalent", "reason": "the same function on the contract", "equation": "toy.eq1"}
    explained = stryker._discovered_status(_discovered(outcome, why))
    assert explained["status"] == "Ignored"
    assert explained["statusReason"].startswith("explained (equivalent): the same function on the contract "
                                                "(beside toy.eq1); ")
    assert stryker._discovered_status(_discovered(outcome))["status"] == "Survived"
