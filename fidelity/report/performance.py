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


HEADERS = ("command", "wall", "target", "", "x floor", "peak memory", "peer in the same run")


def met_words(ok: bool | None) -> str:
    """A target's verdict in the words every benchmark output uses ("-": no target)."""
    return "-" if ok is None else "met" if ok else "MISSED"


def load_averages(machine: dict) -> dict[str, str]:
    """The machine's load averages (1, 5, 15 min) before and after the run, as text."""
    return {k: "n/a" if machine.get(k) is None else ", ".join(f"{x:.2f}" for x in machine[k])
            for k in ("load_average_before", "load_average_after")}


def cells(f: dict) -> tuple[str, ...]:
    """One figure of bench.json as the row under HEADERS (the ledger's table and the bench's terminal table)."""
    peer = f.get("peer")
    peer_text = "-" if peer is None else f"{peer['name']} ({peer['command']}): {peer['seconds']:.1f} s, " \
                                          f"{f['peer_over_figure']:.2f}x the time"
    if peer is not None and f.get("target_peer_over_figure") is not None:
        peer_text += f" (target >= {f['target_peer_over_figure']:.0f}x: {met_words(f['peer_over_figure'] >= f['target_peer_over_figure'])})"
    memory = "-" if f.get("peak_process_mib") is None else f"{f['peak_process_mib']:.0f} MiB" + (
        "" if f.get("target_peak_mib") is None else f" (target <= {f['target_peak_mib']:.0f}: {met_words(f.get('met_peak'))})")
    return (f["command"], f"{f['seconds']:.2f} s", "-" if f["target_s"] is None else f"<= {f['target_s']:.1f} s",
            met_words(f["met"]), f"{f['ratio_to_floor']:.2f}x"
            + ("" if f["target_ratio_to_floor"] is None else f" (target <= {f['target_ratio_to_floor']:.1f}x: "
                                                             f"{met_words(f['met_ratio_to_floor'])})"),
            memory, peer_text)


def section(doc: Document, ledger: dict) -> None:
    bench = ledger.get("performance")
    if not bench:
        return
    m, v = bench["machine"], bench["versions"]
    loads = load_averages(m)
    doc.add(Heading(2, "Performance", "performance"))
    doc.add(Para((f"Measured by ", Code("python -m fidelity.bench.all"), f" at {bench['measured_at']} on "
                  f"{m['cpu_count']} cores ({m['platform']}; load average (1, 5, 15 min) before {loads['load_average_before']}, "
                  f"after {loads['load_average_after']}), Python {v.get('python')}, torch {v.get('torch')}. The floor, ",
                  Code(bench["floor"]["command"]), f", took {bench['floor']['seconds']:.2f} s in the same run.")))
    doc.add(Table(HEADERS, tuple((Code(row[0]), *row[1:]) for row in map(cells, bench["figures"]))))

