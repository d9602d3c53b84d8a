"""A record that cannot be read is named, never skipped: `check` goes RED naming the file and why, and
`perturb --stale` re-creates it. Issue 15: a truncated record was ignored by the loader, so check
stayed GREEN when another record accepted the gate and said "never seen red" otherwise, naming no file.
The project is the one `fidelity init` writes, its perturbations run once (conftest's
perturbed_init_project, shared by the run; each test changes a copy)."""
import json
import shutil

import pytest
from toy_project import fidelity

from fidelity.evidence import jsonio, paths, store
from fidelity.evidence.evidence_file import FILE_SCHEMA
from fidelity.evidence.paths import CLEAN_RUNS_FILE
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
    victim = _evidence_files(root)[0]
    victim.write_text(victim.read_text()[:200])
    report, problems = _evidence_problems(root)
    name = victim.relative_to(root).as_posix()
    assert not report["ok"] and len(problems) == 1, problems
    assert problems[0].startswith(f"evidence record {name} is not valid (not JSON (truncated?)")
    assert problems[0].endswith("run `fidelity perturb --stale` to re-create it")
    assert "check: RED" in report["text"] and name in report["text"]
    assert fidelity("perturb", "--stale", cwd=root).returncode == 0
    assert json.loads(victim.read_text())["schema"] == FILE_SCHEMA
    report, problems = _evidence_problems(root)
    assert report["ok"] and not problems


def test_a_perturbations_file_copied_under_another_name_is_named_as_a_copy(accepted, tmp_path):
    root = _copy(accepted, tmp_path, "copied")
    original = _evidence_files(root)[0]
    copy = original.with_name("copy-" + original.name)
    shutil.copy(original, copy)
    _, problems = _evidence_problems(root)
    assert problems == [f"evidence record {copy.relative_to(root).as_posix()} is not valid (it holds records of "
                        f"{json.loads(original.read_text())['perturbation']}, whose file is {original.name} "
                        f"(moved or copied)): delete this copy"]


def _evidence_files(root):
    return sorted(f for f in (root / "reports" / "evidence").glob("*.json") if f.name != CLEAN_RUNS_FILE)


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
    written = json.loads(path.read_text())
    stamped = written["records"][good["gate"]]
    assert stamped == {**good, "record_sha256": record_hash(good)}
    assert store.scan(root) == ([EvidenceRecord.from_json(stamped)], [])
    path.write_text(json.dumps({**written, "records": {good["gate"]: edit(stamped)}}))
    records, bad = store.scan(root)
    assert records == [] and [(f, why.startswith(f"its record of {good['gate']}: {says}"), todo)
                              for f, why, todo in bad] == [(path, True, RECREATE)]


def test_evidence_in_the_old_layout_is_refused_by_name_until_converted_to_the_same_files(accepted, tmp_path):
    """A project upgrading from a file per gate: check, report and perturb name the folder and the command,
    read nothing, and `perturb --convert-evidence` writes back the very bytes the runner wrote."""
    root = _copy(accepted, tmp_path, "upgrading")
    evidence = root / "reports" / "evidence"
    written = {f.name: f.read_bytes() for f in _evidence_files(root)}
    for name in written:  # the old layout: each record alone, as jsonio wrote it, in its perturbation's folder
        for rec in json.loads((evidence / name).read_text())["records"].values():
            jsonio.write_json(paths.old_layout_path(evidence, rec["perturbation"], rec["gate"]), rec)
        (evidence / name).unlink()
    for argv in (["check"], ["report", "--no-gates"], ["perturb", "--stale"]):
        done = fidelity(*argv, cwd=root)
        assert done.returncode == 2 and "old layout" in done.stderr, (argv, done.stdout, done.stderr)
        assert "`fidelity perturb --convert-evidence` (the same records" in done.stderr
    done = fidelity("perturb", "--convert-evidence", cwd=root)
    assert done.returncode == 0, done.stderr
    records = sum(len(json.loads(b)["records"]) for b in written.values())
    assert f"{records} records converted into {len(written)} files under reports/evidence" in done.stdout
    assert {f.name: f.read_bytes() for f in _evidence_files(root)} == written
    assert not [d for d in evidence.iterdir() if d.is_dir()]
    report, problems = _evidence_problems(root)
    assert report["ok"] and not problems
