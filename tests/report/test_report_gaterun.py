"""The gate run behind the subject matrix: one child pytest over a toy repo's tests/gates, what it keeps
(status per subject, fixtures read, rtol and separation readings), and reading a recorded run back."""
from __future__ import annotations

import json
import textwrap

import pytest

from fidelity.report import gaterun

GATES = textwrap.dedent('''\
    import json
    from pathlib import Path

    import pytest

    from fidelity.gates import readings


    @pytest.mark.gate(equations=["toy.eq1"])
    def test_reads_the_fixture():
        data = json.loads((Path(__file__).parents[2] / "fixtures" / "toy.fx.json").read_text())
        readings.record(0.1, "rtol")
        readings.record(42.0, "fixture_separation")
        assert data["expected"]["y"]["float64"] == [2.0, 4.0]


    @pytest.mark.gate(equations=["toy.eq3"])
    def test_fails():
        assert 1 == 2


    @pytest.mark.gate(equations=["toy.eq4"])
    def test_not_run():
        pytest.skip("not run: no CUDA device")
    ''')


def test_run_records_what_each_gate_did(toy):
    (toy.root / "tests" / "gates" / "test_toy.py").write_text(GATES)
    said = []
    record = gaterun.run(toy.root, toy.fixtures, said.append)
    assert record["schema"] == gaterun.SCHEMA and record["returncode"] == 1
    assert said[0].startswith("report: running the gate suite") and "3 gates, 3 instances" in said[-1]
    rows = {r["gate"].split("::")[1]: r for r in record["gates"]}
    ok = rows["test_reads_the_fixture"]
    assert ok["status"] == "passed" and ok["equations"] == ["toy.eq1"]
    assert ok["fixtures_read"] == ["fixtures/toy.fx.json"]
    assert ok["rtol"] == 0.1 and ok["separations"] == {"fixture_separation": 42.0}
    assert rows["test_fails"]["status"] == "failed"
    assert rows["test_fails"]["failed"][0]["message"].startswith("assert 1 == 2")
    not_run = rows["test_not_run"]["subjects"]["(no subject)"]
    assert not_run["status"] == "not run" and not_run["not_run_reasons"] == ["Skipped: not run: no CUDA device"]
    assert {"python", "torch", "fidelity", "platform", "cuda"} <= set(record["environment"])
    assert record["subjects"] == []  # as the gate child saw them: the toy names no subject (ours are not asked)


def test_readings_summary_takes_the_loosest_rtol_and_the_smallest_separation():
    summary = gaterun.readings_summary([
        {"readings": {"rtol": 1e-6, "fixture_separation": 50.0, "reading": 1.0}},
        {"readings": {"rtol": 1e-3, "fixture_separation": 12.0}},
        {"readings": {"weakest_fixture_separation": "Infinity"}},
        {"readings": None},
    ])
    assert summary == {"rtol": 1e-3, "separations": {"fixture_separation": 12.0,
                                                     "weakest_fixture_separation": float("inf")}}


def test_load_says_what_is_wrong(tmp_path):
    with pytest.raises(gaterun.GateRunError, match="no recorded gate run"):
        gaterun.load(tmp_path / "missing.json")
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(gaterun.GateRunError, match="unreadable"):
        gaterun.load(tmp_path / "junk.json")
    (tmp_path / "other.json").write_text(json.dumps({"schema": "something else"}))
    with pytest.raises(gaterun.GateRunError, match="not a gate run record"):
        gaterun.load(tmp_path / "other.json")
    record = {"schema": gaterun.SCHEMA, "gates": []}
    (tmp_path / "ok.json").write_text(gaterun.dumps(record))
    assert gaterun.load(tmp_path / "ok.json") == record
