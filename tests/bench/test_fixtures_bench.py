"""fixtures_bench.measure: best of each command, the ratio of the bests, and a failing command is an error."""
import sys

import pytest

from fidelity.bench import fixtures_bench as fb


def test_measure_reports_the_bests_and_their_ratio(monkeypatch):
    monkeypatch.setattr(fb, "VERIFY", [sys.executable, "-c", "import time; time.sleep(0.2)"])
    monkeypatch.setattr(fb, "TORCH_IMPORT", [sys.executable, "-c", "pass"])
    m = fb.measure(2)
    assert m["verify_s"] == min(m["verify_runs"]) and len(m["verify_runs"]) == 2
    assert m["torch_import_s"] == min(m["torch_import_runs"]) and len(m["torch_import_runs"]) == 2
    assert m["verify_s"] > 0.2 and m["ratio"] == pytest.approx(m["verify_s"] / m["torch_import_s"])


def test_a_failing_command_is_reported_not_timed(monkeypatch, capsys):
    monkeypatch.setattr(fb, "VERIFY", [sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(fb.BenchFailed):
        fb.measure(1)
    assert fb.main(["--repeat", "1"]) == 1
