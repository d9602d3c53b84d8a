"""A record that cannot be read is named, never skipped: `check` goes RED naming the file and why, and
`perturb --stale` re-creates it. Issue 15: a truncated record was ignored by the loader, so check
stayed GREEN when another record accepted the gate and said "never seen red" otherwise, naming no file.
The project is the one `fidelity init` writes, its perturbations run once (conftest's
perturbed_init_project, shared by the run; each test changes a copy)."""
import json
import shutil

import pytest
from toy_project import fidelity

from fidelity.evidence import store
from fidelity.evidence.record import RECREATE, SCHEMA, EvidenceRecord, record_hash


@pytest.fixture(scope="module")
def accepted(perturbed_init_project):
    return perturbed_init_project.root


def _copy(root, tmp_path, name):
    dest = tmp_path / name
    shutil.copytree(root, dest)
    return dest


def _evidence_problems(root):
    """check's report (--json-file) and its evidence stage's problems with records; the report's text
    lines, what the terminal got from the same run, under "text"."""
    check = fidelity("check", "--json-file", str(root / "check.json"), cwd=root)
    report = json.loads((root / "check.json").read_text())
    stage = next(s for s in report["stages"] if s["stage"] == "evidence")
    return {**report, "text": check.stdout}, [p for p in stage["problems"] if p.startswith("evidence record ")]


def test_a_truncated_record_turns_check_red_naming_it_and_perturb_stale_re_creates_it(accepted, tmp_path):
    root = _copy(accepted, tmp_path, "truncated")
    victim = sorted((root / "reports" / "evidence").glob("*/*.json"))[0]
    victim.write_text(victim.read_text()[:200])
    report, problems = _evidence_problems(root)
    name = victim.relative_to(root).as_posix()
    assert not report["ok"] and len(problems) == 1, problems
    assert problems[0].startswith(f"evidence record {name} is not valid (not JSON (truncated?)")
    assert problems[0].endswith("run `fidelity perturb --stale` to re-create it")
    assert "check: RED" in report["text"] and name in report["text"]
    assert fidelity("perturb", "--stale", cwd=root).returncode == 0
    assert json.loads(victim.read_text())["schema"] == SCHEMA
    report, problems = _evidence_problems(root)
    assert report["ok"] and not problems


def test_a_record_copied_under_another_perturbation_is_named_as_a_copy(accepted, tmp_path):
    root = _copy(accepted, tmp_path, "copied")
    folders = sorted(d for d in (root / "reports" / "evidence").iterdir() if d.is_dir())
    original = sorted(folders[0].glob("*.json"))[0]
    copy = folders[1] / ("copy-" + original.name)
    shutil.copy(original, copy)
    _, problems = _evidence_problems(root)
    assert problems == [f"evidence record {copy.relative_to(root).as_posix()} is not valid (it records "
                        f"{folders[0].name} x {json.loads(original.read_text())['gate']}, whose record lies at "
                        f"{original.relative_to(root / 'reports' / 'evidence').as_posix()} (moved or copied)): "
                        f"delete this copy"]


@pytest.mark.parametrize("edit, says", [
    (lambda r: [r], "not a record (a JSON list, not an object)"),
    (lambda r: {**r, "schema": "fidelity.perturb.evidence/0"}, "schema 'fidelity.perturb.evidence/0'"),
    (lambda r: {k: v for k, v in r.items() if k != "hashes"}, "no 'hashes' field"),
    (lambda r: {**r, "green_after": "yes"}, "'green_after' is a str"),
    (lambda r: {**r, "outcome": "caught"}, "outcome 'caught' is none of"),
    (lambda r: {k: v for k, v in r.items() if k != "record_sha256"}, "it carries no record_sha256"),
    (lambda r: {**r, "reading": 0.5}, "its content does not match its record_sha256 (edited by hand?)"),
])
def test_each_kind_of_invalid_record_is_reported_with_its_reason(tmp_path, edit, says):
    root = tmp_path / "evidence"
    good = {"schema": SCHEMA, "perturbation": "P1", "gate": "tests/g.py::test_x", "gate_file": "tests/g.py",
            "target": "m", "outcome": "red_by_assertion", "hashes": {}, "green_after": True, "edits_sha256": "0",
            "reading": 0.25}
    path = store.write_record(root, good)
    stamped = json.loads(path.read_text())
    assert stamped == {**good, "record_sha256": record_hash(good)}
    assert store.scan(root) == ([EvidenceRecord.from_json(stamped)], [])
    path.write_text(json.dumps(edit(stamped)))
    records, bad = store.scan(root)
    assert records == [] and [(f, why.startswith(says), todo) for f, why, todo in bad] == \
        [(path, True, RECREATE)]
