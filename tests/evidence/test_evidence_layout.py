"""One evidence file per perturbation (issue 54 point 5): `<evidence root>/<id>.json` holds every record of
that perturbation by gate, the same records with the same hashes as a file per gate held them; a re-run
of some gates keeps the others' records, a gate no longer run goes, an unchanged re-run touches nothing,
and a folder still in the old layout is named with the command that converts it, never read in part."""
import json

import pytest

from fidelity.evidence import evidence_file, jsonio, old_layout, paths, record, store
from fidelity.evidence.record import CLEAN_RUNS, SCHEMA, EvidenceRecord, record_hash

A, B, C = "tests/g.py::test_a", "tests/g.py::test_b", "tests/h.py::test_c"


def _rec(perturbation: str, gate: str, **change) -> dict:
    return {"schema": SCHEMA, "perturbation": perturbation, "gate": gate, "gate_file": gate.split("::")[0],
            "target": "m", "outcome": "red_by_assertion", "hashes": {"gate_file": "1", "target_source": "2"},
            "green_after": True, "edits_sha256": "0", "reading": 0.25, "clean_runs": CLEAN_RUNS,
            "recorded_at": "2026-12-01T10:00:00Z", "instances": [{"nodeid": f"{gate}[x]", "readings": {"r": 1.5}}],
            "versions": {"python": "3.11.9", "torch": "2.13.0", "pytest": "8.3.0", "fidelity": "0.1.0",
                         "platform": "Linux-6.1-x86_64"}, **change}


def _stamped(rec: dict) -> dict:
    return {**rec, "record_sha256": record_hash(rec)}


def test_a_perturbations_records_lie_in_one_file_sorted_by_gate_and_read_back_with_their_hashes(tmp_path):
    for rec in (_rec("P1", C), _rec("P1", A), _rec("P2", B)):
        store.write_record(tmp_path, rec)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["P1.json", "P2.json"]
    text = (tmp_path / "P1.json").read_text(encoding="utf-8")
    assert text == jsonio.dumps({"schema": evidence_file.FILE_SCHEMA, "perturbation": "P1",
                                 "records": {A: _stamped(_rec("P1", A)), C: _stamped(_rec("P1", C))}})
    assert text.index(A) < text.index(C)
    loaded = store.load_all(tmp_path)
    assert loaded == [EvidenceRecord.from_json(_stamped(_rec(p, g))) for p, g in (("P1", A), ("P1", C), ("P2", B))]
    assert store.load_all(tmp_path, ["P2"]) == loaded[2:]


def test_each_records_hash_is_proved_from_the_files_bytes_without_re_serialising(tmp_path, monkeypatch):
    store.write_records(tmp_path, "P1", [_rec("P1", A), _rec("P1", B)])
    monkeypatch.setattr(record, "record_hash", lambda r: pytest.fail("re-serialised a record to check its hash"))
    assert len(store.load_all(tmp_path)) == 2


def test_a_rerun_of_one_gate_keeps_the_other_gates_records_as_they_were(tmp_path):
    path = store.write_records(tmp_path, "P1", [_rec("P1", A), _rec("P1", B)])
    store.write_records(tmp_path, "P1", [_rec("P1", A, reading=0.5, recorded_at="2026-12-02T09:00:00Z")], keep=[B])
    records = json.loads(path.read_text())["records"]
    assert records[B] == _stamped(_rec("P1", B))
    assert records[A]["reading"] == 0.5 and records[A]["recorded_at"] == "2026-12-02T09:00:00Z"


def test_a_gate_no_longer_run_is_dropped_and_a_file_left_empty_is_deleted(tmp_path):
    path = store.write_records(tmp_path, "P1", [_rec("P1", A), _rec("P1", B)])
    store.write_records(tmp_path, "P1", [_rec("P1", A)], keep=[])
    assert list(json.loads(path.read_text())["records"]) == [A]
    store.write_records(tmp_path, "P1", [], keep=[])
    assert not path.exists() and store.load_all(tmp_path) == []


def test_an_unchanged_rerun_leaves_the_file_untouched(tmp_path):
    path = store.write_records(tmp_path, "P1", [_rec("P1", A), _rec("P1", B)])
    before, stat = path.read_bytes(), path.stat()
    later = {"recorded_at": "2026-12-02T09:00:00Z", "versions": {**_rec("P1", A)["versions"], "platform": "other"}}
    store.write_records(tmp_path, "P1", [_rec("P1", B, **later), _rec("P1", A, **later)], keep=[])
    assert path.read_bytes() == before and path.stat().st_mtime_ns == stat.st_mtime_ns


def test_a_record_edited_in_its_file_or_a_file_copied_is_named_and_the_others_still_read(tmp_path):
    path = store.write_records(tmp_path, "P1", [_rec("P1", A), _rec("P1", B)])
    path.write_text(path.read_text().replace('"reading": 0.25', '"reading": 0.5', 1))
    (tmp_path / "P9.json").write_text(path.read_text())  # P1's records, copied where P9's would lie
    records, bad = store.scan(tmp_path)
    assert [(r.perturbation, r.gate) for r in records] == [("P1", B)]
    assert [(f.name, why) for f, why, _ in bad] == [
        ("P1.json", f"its record of {A}: its content does not match its record_sha256 (edited by hand?)"),
        ("P9.json", "it holds records of P1, whose file is P1.json (moved or copied)")]


def _old_layout(root, records: list[dict]) -> None:
    """Records as the old layout wrote them: a file per gate in a folder per perturbation."""
    for rec in records:
        jsonio.write_json(paths.old_layout_path(root, rec["perturbation"], rec["gate"]), _stamped(rec))


def test_an_old_layout_folder_is_named_with_the_command_that_converts_it_never_read_in_part(tmp_path):
    store.write_record(tmp_path, _rec("P2", B))
    _old_layout(tmp_path, [_rec("P1", A)])
    for read in (lambda: store.load_all(tmp_path), lambda: store.scan(tmp_path, ["P2"]),
                 lambda: store.write_record(tmp_path, _rec("P1", C))):
        with pytest.raises(old_layout.OldLayout, match=r"old layout.*\(P1/\).*`fidelity perturb --convert-evidence "):
            read()


def test_the_converter_moves_the_same_records_into_the_files_the_runner_writes(tmp_path):
    new, old = tmp_path / "new", tmp_path / "old"
    recs = [_rec("P1", A), _rec("P1", C), _rec("P/2", B, outcome="survived")]
    for rec in recs:
        store.write_record(new, rec)
    _old_layout(old, recs)
    (old / paths.CLEAN_RUNS_FILE).write_text("{}\n")
    assert store.convert_old_layout(old) == (3, 2, [])
    assert sorted(f.name for f in old.iterdir()) == ["P1.json", "P_2.json", paths.CLEAN_RUNS_FILE]
    assert all((old / name).read_bytes() == (new / name).read_bytes() for name in ("P1.json", "P_2.json"))
    assert store.load_all(old) == store.load_all(new)


def test_the_converter_leaves_a_bad_file_in_place_and_names_it(tmp_path):
    _old_layout(tmp_path, [_rec("P1", A), _rec("P1", B)])
    victim = paths.old_layout_path(tmp_path, "P1", B)
    victim.write_text('{"schema": ')
    converted, files, left = store.convert_old_layout(tmp_path)
    assert (converted, files) == (1, 1) and [f for f, _, _ in left] == [victim] and victim.exists()
    with pytest.raises(old_layout.OldLayout):
        store.load_all(tmp_path)


def test_the_command_named_finds_the_folder_it_names(tmp_path):
    for root, option in ((tmp_path / "reports" / "evidence", ""),
                         (tmp_path / "reports" / "catalogues" / "mine" / "evidence",
                          f" --evidence {tmp_path / 'reports' / 'catalogues' / 'mine' / 'evidence'}")):
        _old_layout(root, [_rec("P1", A)])
        with pytest.raises(old_layout.OldLayout) as refused:
            store.load_all(root)
        assert f"`fidelity perturb --convert-evidence{option}` (the same records" in str(refused.value)
