"""`fidelity report` run again on what it wrote, as on a clean clone of a project that committed its
reports, gives every file byte for byte (issue 31: the gate run's time changed one committed file)."""
import json

import pytest
from toy_project import fidelity


@pytest.fixture(scope="module")
def reported(perturbed_init_project, tmp_path_factory):
    """A copy of the init project after one `fidelity report` in it."""
    root = perturbed_init_project.copy(tmp_path_factory.mktemp("reported") / "mypaper")
    first = fidelity("report", cwd=root)
    assert first.returncode == 0, first.stderr[-2000:]
    return root


def test_report_on_what_it_wrote_reproduces_every_file(reported):
    root = reported
    written = {p.relative_to(root): p.read_bytes() for p in sorted((root / "reports").rglob("*")) if p.is_file()}
    assert any(p.name == "gate-run.json" for p in written) and any(p.name == "LEDGER.md" for p in written)

    again = fidelity("report", cwd=root)
    assert again.returncode == 0, again.stderr[-2000:]
    now = {p.relative_to(root): p.read_bytes() for p in sorted((root / "reports").rglob("*")) if p.is_file()}
    assert sorted(now) == sorted(written)
    assert [str(p) for p in written if now[p] != written[p]] == []


def test_a_users_ledger_covers_its_own_mechanism_only(reported):
    """Issue 33: fidelity's six built-in mechanisms, which no gate of the project names, were listed "missing"."""
    ledger = json.loads((reported / "reports" / "ledger.json").read_text())
    assert [r["mechanism"] for r in ledger["coverage"]["rows"]] == ["tempered_softmax"]


def test_the_gate_run_keeps_its_time_only_while_what_it_saw_is_the_same(tmp_path):
    from fidelity.report import gaterun

    path = tmp_path / "gate-run.json"
    before = {"schema": gaterun.SCHEMA, "recorded_at": "2026-01-01T00:00:00Z", "returncode": 0, "gates": []}
    path.write_text(gaterun.dumps(before))
    same = {**before, "recorded_at": "2026-02-02T00:00:00Z"}
    assert gaterun.keep_time(same, path)["recorded_at"] == "2026-01-01T00:00:00Z"
    other = {**same, "returncode": 1}
    assert gaterun.keep_time(other, path)["recorded_at"] == "2026-02-02T00:00:00Z"
    assert gaterun.keep_time(same, tmp_path / "none.json")["recorded_at"] == "2026-02-02T00:00:00Z"
