"""The ledger's performance section: what `python -m fidelity.bench.all` measured, as it wrote it.

The figures come from the project's reports/bench.json, never from the run that renders the
ledger (a ledger is the same bytes on any machine). Each row is a command as a user runs it,
its target, whether it was met, its multiple of the torch-import floor and its naive or serial
peer, all measured in that one benchmark run on the machine it names. No file: no section.
"""
from __future__ import annotations

import json
from pathlib import Path

from fidelity.report.blocks import Code, Document, Heading, Para, Table

BENCH_FILE = "bench.json"


def gather(reports_dir: Path) -> dict | None:
    """The benchmark's figures from `reports_dir`/bench.json, or None when there is none (or it is not JSON)."""
    try:
        return json.loads((Path(reports_dir) / BENCH_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _met(ok) -> str:
    return "-" if ok is None else "met" if ok else "MISSED"


def _row(f: dict) -> tuple:
    peer = f.get("peer")
    peer_text = "-" if peer is None else f"{peer['name']} ({peer['command']}): {peer['seconds']:.1f} s, " \
                                          f"{f['peer_over_figure']:.2f}x the time"
    if peer is not None and f.get("target_peer_over_figure") is not None:
        peer_text += f" (target >= {f['target_peer_over_figure']:.0f}x: {_met(f['peer_over_figure'] >= f['target_peer_over_figure'])})"
    memory = "-" if f.get("peak_process_mib") is None else f"{f['peak_process_mib']:.0f} MiB" + (
        "" if f.get("target_peak_mib") is None else f" (target <= {f['target_peak_mib']:.0f}: {_met(f.get('met_peak'))})")
    return (Code(f["command"]), f"{f['seconds']:.2f} s", "-" if f["target_s"] is None else f"<= {f['target_s']:.1f} s",
            _met(f["met"]), f"{f['ratio_to_floor']:.2f}x"
            + ("" if f["target_ratio_to_floor"] is None else f" (target <= {f['target_ratio_to_floor']:.1f}x: "
                                                             f"{_met(f['met_ratio_to_floor'])})"),
            memory, peer_text)


def section(doc: Document, ledger: dict) -> None:
    bench = ledger.get("performance")
    if not bench:
        return
    m, v = bench["machine"], bench["versions"]
    loads = {k: "n/a" if m.get(k) is None else ", ".join(f"{x:.2f}" for x in m[k])
             for k in ("load_average_before", "load_average_after")}
    doc.add(Heading(2, "Performance", "performance"))
    doc.add(Para((f"Measured by ", Code("python -m fidelity.bench.all"), f" at {bench['measured_at']} on "
                  f"{m['cpu_count']} cores ({m['platform']}; load average (1, 5, 15 min) before {loads['load_average_before']}, "
                  f"after {loads['load_average_after']}), Python {v.get('python')}, torch {v.get('torch')}. The floor, ",
                  Code(bench["floor"]["command"]), f", took {bench['floor']['seconds']:.2f} s in the same run.")))
    doc.add(Table(("command", "wall", "target", "", "x floor", "peak memory", "peer in the same run"),
                  tuple(_row(f) for f in bench["figures"])))
