"""The ledger's performance section shows what fidelity.bench.all wrote, a missed target as MISSED, and
nothing at all when the project has no benchmark figures."""
import json

from fidelity.bench import all as bench_all
from fidelity.report import performance
from fidelity.report.blocks import Document
from fidelity.report.markdown import render


def _bench():
    check = bench_all._figure("check", 40.0, 2.0, "fidelity check",
                              {"name": "gate suite serially", "command": "fidelity check --jobs 1", "seconds": 50.0},
                              peak_process_mib=450.0, target_peak_mib=500.0, met_peak=True)
    verify = bench_all._figure("fixtures_verify", 1.2, 2.0, "fidelity fixtures --verify")
    return {"measured_at": "2026-12-02T02:00:00Z", "floor": {"command": "python -c 'import torch'", "seconds": 2.0},
            "figures": [check, verify], "versions": {"python": "3.11.7", "torch": "2.13.0"},
            "machine": {"cpu_count": 2, "platform": "Linux", "load_average_before": [0.1, 0.1, 0.1],
                        "load_average_after": [0.5, 0.2, 0.1]}}


def _markdown(ledger) -> str:
    doc = Document("t")
    performance.section(doc, ledger)
    return render(doc).replace("\\<", "<")  # Markdown escapes "<" in cells


def test_each_figure_is_a_row_with_its_target_floor_multiple_and_peer(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps(_bench()))
    text = _markdown({"performance": performance.gather(tmp_path)})
    check_row = next(line for line in text.splitlines() if "`fidelity check`" in line)
    assert "40.00 s" in check_row and "MISSED" in check_row and "20.00x (target <= 10.0x: MISSED)" in check_row
    assert "450 MiB (target <= 500: met)" in check_row and "50.0 s, 1.25x the time" in check_row
    verify_row = next(line for line in text.splitlines() if "`fidelity fixtures --verify`" in line)
    assert "MISSED" not in verify_row and "met" in verify_row


def test_no_benchmark_file_no_section(tmp_path):
    assert performance.gather(tmp_path) is None
    assert "Performance" not in _markdown({"performance": performance.gather(tmp_path)})
