"""Evidence files read before are read back by the sha256 of their bytes (fidelity/evidence/read_memo.py):
the same records, not parsed again; other bytes (a record edited by hand, even one byte) are parsed and
checked in full; a file with a bad record, or a memo that cannot be read, is never taken from the memo."""
from fidelity.evidence import evidence_file, read_memo, store
from test_evidence_layout import A, B, _rec


def _whole(memo) -> list:
    """The memo's files that keep a file whole (each is kept in the light view too)."""
    return [p for p in memo.glob("*.marshal") if not p.name.endswith(".light.marshal")]


def _parses(monkeypatch) -> list[str]:
    """Counts evidence_file.parse calls (a file read in full)."""
    calls, real = [], evidence_file.parse
    monkeypatch.setattr(evidence_file, "parse", lambda content: calls.append(1) or real(content))
    return calls


def test_a_file_read_before_gives_the_same_records_without_being_parsed_again(tmp_path, monkeypatch):
    root, memo = tmp_path / "evidence", tmp_path / "memo"
    store.write_records(root, "P1", [_rec("P1", A), _rec("P1", B)])
    store.write_records(root, "P2", [_rec("P2", B)])
    parses = _parses(monkeypatch)
    first = store.scan(root, memo=memo)
    assert len(parses) == 2 and first[1] == []
    again = store.scan(root, memo=memo)
    assert len(parses) == 2  # both from the memo
    assert again == first and [r.json for r in again[0]] == [r.json for r in first[0]]
    assert again == store.scan(root)  # as a read without a memo gives them


def test_a_record_edited_by_hand_after_its_file_was_read_is_named_not_read_from_the_memo(tmp_path, monkeypatch):
    root, memo = tmp_path / "evidence", tmp_path / "memo"
    path = store.write_records(root, "P1", [_rec("P1", A), _rec("P1", B)])
    store.scan(root, memo=memo)
    path.write_text(path.read_text().replace('"reading": 0.25', '"reading": 0.5', 1))
    parses = _parses(monkeypatch)
    records, bad = store.scan(root, memo=memo)
    assert len(parses) == 1 and [r.gate for r in records] == [B]
    assert [why for _, why, _ in bad] == [f"its record of {A}: its content does not match its record_sha256 (edited by hand?)"]
    records, bad = store.scan(root, memo=memo)  # a file with a bad record is not kept: named again
    assert len(parses) == 2 and len(bad) == 1


def test_a_memo_that_cannot_be_read_or_was_altered_is_a_full_read(tmp_path, monkeypatch):
    root, memo = tmp_path / "evidence", tmp_path / "memo"
    path = store.write_records(root, "P1", [_rec("P1", A)])
    first = store.scan(root, memo=memo)
    [kept] = _whole(memo)
    assert kept.stem == read_memo.key(path.read_bytes())
    parses = _parses(monkeypatch)
    kept.write_bytes(b"not marshal data")
    assert store.scan(root, memo=memo) == first and len(parses) == 1
    read_memo.keep(memo, kept.stem, "P1", [(A, {"schema": "another"})])  # not a record: the file is read
    assert store.scan(root, memo=memo) == first and len(parses) == 2


def test_a_read_of_the_whole_folder_drops_what_no_file_holds_now_and_a_read_of_some_keeps_it(tmp_path):
    root, memo = tmp_path / "evidence", tmp_path / "memo"
    path = store.write_records(root, "P1", [_rec("P1", A)])
    store.write_records(root, "P2", [_rec("P2", B)])
    store.scan(root, memo=memo)
    store.scan(root, memo=memo, light=True)  # check's view of each, made from the whole one
    was = read_memo.key(path.read_bytes())
    store.write_records(root, "P1", [_rec("P1", A, reading=0.5)], keep=[])
    store.scan(root, ["P1"], memo=memo)  # some files: the others' entries may still be current
    assert (memo / f"{was}.marshal").exists() and (memo / f"{was}.light.marshal").exists() and len(_whole(memo)) == 3
    store.scan(root, memo=memo, light=True)
    store.scan(root, memo=memo)
    now = {read_memo.key(f.read_bytes()) for f in root.glob("*.json")}
    assert {p.stem for p in _whole(memo)} == now
    assert {p.name.removesuffix(".light.marshal") for p in memo.glob("*.light.marshal")} == now


def test_a_light_read_leaves_out_each_records_instances_and_diff_and_nothing_else(tmp_path):
    import dataclasses

    root, memo = tmp_path / "evidence", tmp_path / "memo"
    store.write_records(root, "P1", [_rec("P1", A, diff="--- a\n+++ b\n"), _rec("P1", B)])
    whole, _ = store.scan(root, memo=memo)
    light, bad = store.scan(root, memo=memo, light=True)
    assert bad == [] and all(r.instances is None and r.diff is None for r in light)  # not read: never "none"
    assert all("instances" not in r.json and "diff" not in r.json for r in light)
    assert whole[0].instances and whole[0].diff  # what the light view leaves out was there
    assert [dataclasses.replace(r, instances=w.instances, diff=w.diff) for r, w in zip(light, whole)] == whole


def test_check_judges_the_light_view_as_it_judges_whole_records(tmp_path):
    from fidelity.check import evidence_stage
    from fidelity.evidence import verdict

    root, memo = tmp_path / "evidence", tmp_path / "memo"
    store.write_records(root, "P1", [_rec("P1", A), _rec("P1", B, outcome="survived")])
    store.write_records(root, "P2", [_rec("P2", B, green_after=False)])
    whole, _ = store.scan(root, memo=memo)
    light, _ = store.scan(root, memo=memo, light=True)
    spec_of = {"P1": {"id": "P1", "target": "m", "edits": []}, "P2": {"id": "P2", "target": "m", "edits": []}}
    judged = [verdict.judge(records, tmp_path, spec_of) for records in (whole, light)]
    assert [j.stale_reasons for j in judged[0]] == [j.stale_reasons for j in judged[1]]
    assert evidence_stage._acceptance(judged[0], spec_of) == evidence_stage._acceptance(judged[1], spec_of)


def test_the_first_light_read_of_a_file_makes_its_light_view_from_the_whole_one_without_parsing(tmp_path, monkeypatch):
    root, memo = tmp_path / "evidence", tmp_path / "memo"
    store.write_records(root, "P1", [_rec("P1", A)])
    store.scan(root, memo=memo)
    assert list(memo.glob("*.light.marshal")) == []  # a read that is not check's keeps the whole view only
    parses = _parses(monkeypatch)
    [record], _ = store.scan(root, memo=memo, light=True)
    assert parses == [] and record.instances is None and len(list(memo.glob("*.light.marshal"))) == 1
