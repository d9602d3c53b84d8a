"""Evidence records: valid deterministic JSON, acceptance, and staleness when a pinned file changes."""
from __future__ import annotations

import json
import math
import shutil

from fidelity.perturb.clean_run_store import FILE_NAME as CLEAN_RUNS_FILE
from fidelity.evidence import jsonio, store, verdict
from fidelity.evidence.paths import evidence_root, record_file
from fidelity.evidence.record import SCHEMA, EvidenceRecord
from fidelity.evidence.staleness import is_current, staleness
from fidelity.source_meaning import meaning_sha256, meaning_sha256_of

from .conftest import GATE_ADD, GATE_NEG, GATE_SCALE, toy_perturbations


def _copy(main_run, tmp_path):
    dest = tmp_path / "copy"
    shutil.copytree(main_run.repo, dest)
    return dest


def _record(repo, perturbation: str, gate: str) -> dict:
    return json.loads(record_file(evidence_root(repo / "reports"), perturbation).read_text())["records"][gate]


def test_one_file_per_perturbation_with_a_record_per_gate_valid_deterministic_json(main_run):
    files = sorted(f for f in (main_run.repo / "reports" / "evidence").rglob("*.json") if f.name != CLEAN_RUNS_FILE)
    assert [f.name for f in files] == sorted(f"{p['id']}.json" for p in toy_perturbations())
    assert sorted(main_run.result.evidence) == sorted(str(f.relative_to(main_run.repo)) for f in files)
    for f in files:
        text = f.read_text()
        data = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))  # strict: no NaN
        assert jsonio.dumps(data) == text  # sorted keys, indent 1: re-dumping gives the same bytes
        assert sorted(data["records"]) == sorted([GATE_ADD, GATE_NEG, GATE_SCALE])
    assert not list((main_run.repo / "reports").rglob("*.tmp"))
    rec = _record(main_run.repo, "P_add", GATE_ADD)
    assert rec["perturbation"] == "P_add" and rec["title"] == "add subtracts" and rec["spec_file"] == "specs/toy.yaml"
    assert rec["target"] == "toysubj.arith" and rec["target_file"] == "toysubj/arith.py"
    assert rec["gate"] == GATE_ADD and rec["gate_file"] == "tests/toygate_arith.py" and rec["equations"] == ["toy.add"]
    assert rec["outcome"] == "red_by_assertion" and rec["green_after"] is True and rec["listed"] is True
    assert rec["reading"] == 1 / 1.5
    assert rec["predicted"] == {"reading": 0.625, "note": "a deliberately different prediction"}
    assert set(rec["hashes"]) == {"gate_file", "target_source", "perturbed_source", "fixtures", "helpers"}
    # its conftest and the gate library module it imports, by path and by module name (gate_helpers.py)
    assert {"tests/conftest.py", "fidelity.gates.readings"} <= set(rec["hashes"]["helpers"])
    assert rec["hashes"]["helpers"]["tests/conftest.py"] == meaning_sha256(main_run.repo / "tests" / "conftest.py")
    assert list(rec["hashes"]["fixtures"]) == ["fixtures/add_case.json"]
    assert rec["hashes"]["target_source"] == meaning_sha256(main_run.repo / "toysubj" / "arith.py")
    patched = (main_run.repo / "toysubj" / "arith.py").read_bytes().replace(b"return a + b", b"return a - b")
    assert rec["hashes"]["perturbed_source"] == meaning_sha256_of(patched, ".py")
    assert [i["nodeid"] for i in rec["instances"]] == [f"{GATE_ADD}[1.0]", f"{GATE_ADD}[2.0]"]
    assert {"python", "torch", "pytest"} <= set(rec["versions"]) and rec["recorded_at"].endswith("Z")
    assert "+    return a - b" in rec["diff"]
    scale = _record(main_run.repo, "P_add", GATE_SCALE)
    assert scale["hashes"]["fixtures"] == {}  # it read no fixture


def test_write_is_deterministic_and_non_finite_readings_stay_valid_json(tmp_path):
    rec = {"schema": SCHEMA, "perturbation": "P/1", "gate": "tests/x.py::test_y", "reading": jsonio.encode_float(math.nan),
           "z": [3, 1], "a": {"b": 1, "a": 2}, "gate_file": "tests/x.py", "target": "m", "outcome": "red_by_assertion",
           "hashes": {}, "green_after": True, "edits_sha256": "0"}  # every field a valid record has (store.scan)
    p1 = store.write_record(evidence_root(tmp_path), rec)
    first = p1.read_bytes()
    p2 = store.write_record(evidence_root(tmp_path), dict(reversed(list(rec.items()))))
    assert p1 == p2 and p2.read_bytes() == first
    assert p1.name == "P_1.json"
    loaded = json.loads(first)["records"]["tests/x.py::test_y"]
    assert loaded["reading"] == "NaN" and math.isnan(jsonio.decode_float(loaded["reading"]))
    assert store.load_all(evidence_root(tmp_path)) == [EvidenceRecord.from_json(loaded)]


def _acceptance(repo):
    return verdict.by_gate(verdict.judge(store.load_all(evidence_root(repo / "reports")), repo))


def test_acceptance(main_run):
    acc = _acceptance(main_run.repo)
    assert acc[GATE_ADD].accepted is True
    assert acc[GATE_SCALE].accepted is False  # only ever red for another reason
    assert acc[GATE_NEG].accepted is False  # survived, or red by the subject's own assert
    current = acc[GATE_ADD].by + acc[GATE_ADD].not_red
    assert {j.record.perturbation for j in current} == {p["id"] for p in toy_perturbations()}
    assert all(not v.stale for v in acc.values())
    red = [j.record for j in acc[GATE_ADD].by]
    assert red and record_file(evidence_root(main_run.repo / "reports"), red[0].perturbation) == \
        main_run.repo / "reports/evidence/P_add.json"


def test_changed_gate_file_makes_evidence_stale(main_run, tmp_path):
    repo = _copy(main_run, tmp_path)
    gate_file = repo / "tests" / "toygate_arith.py"
    gate_file.write_text(gate_file.read_text() + "\nEDITED = 1\n")
    acc = _acceptance(repo)
    assert acc[GATE_ADD].accepted is False and acc[GATE_ADD].by == acc[GATE_ADD].not_red == []
    assert any("gate file tests/toygate_arith.py changed" in r for j in acc[GATE_ADD].stale for r in j.stale_reasons)


def test_a_changed_conftest_makes_the_evidence_of_the_gates_below_it_stale(main_run, tmp_path):
    repo = _copy(main_run, tmp_path)
    conftest = repo / "tests" / "conftest.py"
    conftest.write_text(conftest.read_text() + "\nEDITED = 1\n")
    recs = store.load_all(evidence_root(repo / "reports"))
    assert recs and all("gate helper tests/conftest.py changed" in staleness(r, repo) for r in recs)
    assert _acceptance(repo)[GATE_ADD].accepted is False


def test_changed_target_makes_evidence_stale(main_run, tmp_path):
    repo = _copy(main_run, tmp_path)
    target = repo / "toysubj" / "arith.py"
    target.write_text(target.read_text() + "\nEDITED = 1\n")
    for rec in store.load_all(evidence_root(repo / "reports")):
        assert not is_current(rec, repo)
        assert "target source toysubj.arith changed" in staleness(rec, repo)
    assert _acceptance(repo)[GATE_ADD].accepted is False


def test_changed_fixture_makes_only_its_readers_stale(main_run, tmp_path):
    repo = _copy(main_run, tmp_path)
    fx = repo / "fixtures" / "add_case.json"
    fx.write_text(fx.read_text().replace("0.5", "0.25"))
    recs = store.load_all(evidence_root(repo / "reports"))
    add = [r for r in recs if r.gate == GATE_ADD]
    others = [r for r in recs if r.gate != GATE_ADD]
    assert add and all("fixture fixtures/add_case.json changed" in staleness(r, repo) for r in add)
    assert others and all(is_current(r, repo) for r in others)
    (repo / "fixtures" / "unused.json").write_text("{}")  # a fixture nobody read changes nothing
    assert all(is_current(r, repo) for r in others)
    fx.unlink()
    assert all("fixture fixtures/add_case.json is missing" in staleness(r, repo) for r in add)


def test_changed_perturbation_makes_its_evidence_stale(main_run):
    recs = [r for r in store.load_all(evidence_root(main_run.repo / "reports")) if r.perturbation == "P_add"]
    p = next(x for x in toy_perturbations() if x["id"] == "P_add")
    assert all(is_current(r, main_run.repo, p) for r in recs)
    p2 = dict(p, edits=[{"find": "return a + b", "replace": "return a * b"}])
    assert all(not is_current(r, main_run.repo, p2) for r in recs)


def test_committed_evidence_holds_no_path_of_the_machine_that_recorded_it():
    """Evidence is committed and read on other machines: the spec location, gate, target and
    fixtures it names are relative to the repository."""
    import json
    from pathlib import Path

    from fidelity.evidence import store

    records = store.load_all(Path(__file__).resolve().parents[2] / "reports" / "evidence")
    assert records
    for rec in records:
        r, path = rec.json, rec.perturbation
        named = [r["spec_file"], r["gate_file"], r["target_file"], *r["hashes"]["fixtures"], *r["hashes"]["helpers"]]
        assert not any(Path(p.split(":")[0]).is_absolute() for p in named), (path, named)
