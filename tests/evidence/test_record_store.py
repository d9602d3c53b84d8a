"""The evidence room: a record is checked on load, judged once, and not rewritten when nothing new was seen."""
import json

import pytest

from fidelity.evidence import jsonio, store
from fidelity.evidence.outcome import Outcome
from fidelity.evidence.record import CLEAN_RUNS, SCHEMA, EvidenceRecord, InvalidRecord

RECORD = {"schema": SCHEMA, "perturbation": "P1", "gate": "tests/g.py::test_x", "gate_file": "tests/g.py",
          "target": "m", "outcome": "red_by_assertion", "hashes": {}, "green_after": True, "edits_sha256": "0",
          "reading": 0.25, "clean_runs": CLEAN_RUNS, "recorded_at": "2026-12-01T10:00:00Z",
          "versions": {"python": "3.11.9", "torch": "2.13.0", "pytest": "8.3.0", "fidelity": "0.1.0",
                       "platform": "Linux-6.1-x86_64"}}


def test_an_unchanged_outcome_leaves_the_record_bytes_and_file_untouched(tmp_path):
    path = store.write_record(tmp_path, RECORD)
    before, stat = path.read_bytes(), path.stat()
    later = {**RECORD, "recorded_at": "2026-12-02T09:00:00Z",
             "versions": {**RECORD["versions"], "platform": "Linux-6.8-x86_64"}}
    assert store.write_record(tmp_path, later) == path
    assert path.read_bytes() == before and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert json.loads(before)["records"][RECORD["gate"]]["recorded_at"] == "2026-12-01T10:00:00Z"  # when first seen


@pytest.mark.parametrize("change", [{"reading": 0.5}, {"outcome": "survived"}, {"clean_runs": 2},
                                    {"versions": {**RECORD["versions"], "torch": "2.11.0"}}])
def test_a_new_observation_or_another_torch_rewrites_it(tmp_path, change):
    path = store.write_record(tmp_path, RECORD)
    store.write_record(tmp_path, {**RECORD, **change, "recorded_at": "2026-12-02T09:00:00Z"})
    written = json.loads(path.read_text())["records"][RECORD["gate"]]
    assert {k: written[k] for k in change} == change and written["recorded_at"] == "2026-12-02T09:00:00Z"


def test_a_record_is_typed_on_load_and_judged_by_one_rule(tmp_path):
    store.write_record(tmp_path, RECORD)
    [rec] = store.load_all(tmp_path)
    assert rec.outcome is Outcome.RED_BY_ASSERTION and rec.accepted
    with pytest.raises(InvalidRecord, match="outcome 'caught' is none of red_by_assertion, red_other, survived, skipped"):
        EvidenceRecord.from_json({**json.loads((tmp_path / "P1.json").read_text())["records"][RECORD["gate"]],
                                  "outcome": "caught"})


def test_a_record_the_runner_would_write_wrongly_is_refused_before_it_is_written(tmp_path):
    with pytest.raises(InvalidRecord, match="'green_after' is a str"):
        store.write_record(tmp_path, {**RECORD, "green_after": "yes"})
    assert not list(tmp_path.rglob("*.json"))


def test_outcomes_are_strings_in_json_and_in_dictionaries():
    assert json.dumps({"o": Outcome.SKIPPED}) == '{"o": "skipped"}'
    assert {"survived": 1}[Outcome.SURVIVED] == 1 and Outcome("red_other").words == "red for another reason"
    assert [o.green for o in Outcome] == [False, False, True, True]


def _written(tmp_path) -> str:
    """The record's text as jsonio writes it alone (as its hash is proved from bytes)."""
    store.write_record(tmp_path, RECORD)
    [rec] = store.load_all(tmp_path)
    return jsonio.dumps(rec.json)


@pytest.mark.parametrize("edit", [
    lambda text: text.replace('"reading": 0.25', '"reading": 0.5'),       # a value changed, the layout kept
    lambda text: json.dumps({**json.loads(text), "reading": 0.5}, indent=4),  # changed and re-laid out
])
def test_a_record_edited_after_writing_is_refused_however_it_is_laid_out(tmp_path, edit):
    with pytest.raises(InvalidRecord, match="does not match its record_sha256"):
        EvidenceRecord.from_text(edit(_written(tmp_path)))


@pytest.mark.parametrize("layout", [lambda obj: json.dumps(obj, indent=4), lambda obj: json.dumps(obj)])
def test_a_record_laid_out_by_another_writer_is_checked_by_its_content(tmp_path, layout):
    # the file's own bytes prove the hash only as jsonio writes them; any other layout of the same
    # content is checked by re-serialising it, and reads as the same record
    text = _written(tmp_path)
    assert EvidenceRecord.from_text(layout(json.loads(text))) == EvidenceRecord.from_text(text)


def test_staleness_reads_each_file_once_per_judgement_and_sees_an_edit_in_the_next(tmp_path, monkeypatch):
    from fidelity.evidence import staleness
    from fidelity.evidence.record import record_hash
    from fidelity.source_meaning import meaning_sha256

    gate_file = tmp_path / "tests" / "g.py"
    gate_file.parent.mkdir()
    gate_file.write_text("x = 1\n")
    body = {**RECORD, "hashes": {"gate_file": meaning_sha256(gate_file), "target_source": "0"}}
    rec = EvidenceRecord.from_json({**body, "record_sha256": record_hash(body)})
    reads = []
    real = staleness.meaning_sha256
    monkeypatch.setattr(staleness, "meaning_sha256", lambda p, memo=None: reads.append(str(p)) or real(p, memo))
    now = staleness.ProjectNow(tmp_path)
    seen = [staleness.staleness(rec, tmp_path, None, now) for _ in range(3)]
    assert seen[0] == seen[1] == seen[2] and not any("tests/g.py" in why for why in seen[0])
    assert reads.count(str(gate_file)) == 1
    gate_file.write_text("x = 2\n")
    assert "gate file tests/g.py changed" in staleness.staleness(rec, tmp_path, None, staleness.ProjectNow(tmp_path))


def test_a_scan_of_some_perturbations_reads_their_files_alone_and_still_names_a_bad_file_among_them(tmp_path):
    store.write_record(tmp_path, RECORD)
    p2 = store.write_record(tmp_path, {**RECORD, "perturbation": "P2"})
    p2.write_text('{"schema": ')  # truncated: named when P2 is read, not read for P1 alone
    records, bad = store.scan(tmp_path, ["P1"])
    assert [(r.perturbation, r.gate) for r in records] == [("P1", RECORD["gate"])] and bad == []
    records, bad = store.scan(tmp_path, ["P1", "P2"])
    assert len(records) == 1 and [f.name for f, _, _ in bad] == [p2.name]
    records, bad = store.scan(tmp_path)
    assert len(records) == 1 and [f.name for f, _, _ in bad] == [p2.name]
