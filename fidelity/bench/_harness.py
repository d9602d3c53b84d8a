"""What the kernel benchmarks share: timing, launch counting, bandwidth, and the table they print.

Timing: on CUDA, CUDA events around `reps` calls after `warmup` calls (the median of the
per-call times); on a CPU, time.perf_counter. Under Triton's interpreter a kernel runs as
numpy, one program at a time: CPU figures are what CI pays, never a speed claim.

Launch counting (torch.profiler): on CUDA, the CUDA kernel events of one call (memcpy and
memset excluded). On a CPU, the outermost aten ops of one call (an aten op inside another
is not counted again), and, for the fused path, the Triton launches its wrapper made
(fidelity.impl.triton._common.LAUNCHES): the interpreter's programs are invisible to torch.

Effective bandwidth: the bytes a call must move at least (its inputs read once, its outputs
written once) over its time, against the device's peak (H200 4.8 TB/s, H100 SXM 3.35 TB/s,
or --peak-tbs).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import torch

PEAK_TBS = {"H200": 4.8, "H100": 3.35, "A100": 2.0}


def device_peak_tbs(device: str, override: float | None = None) -> float | None:
    if override:
        return override
    if device != "cuda":
        return None
    name = torch.cuda.get_device_name()
    for key, tbs in PEAK_TBS.items():
        if key in name:
            return tbs
    return None


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_call(fn: Callable[[], object], device: str, *, warmup: int, reps: int, budget_s: float = 0.5) -> float:
    """Median milliseconds per call of fn(); at most `reps` timed calls, fewer when over budget_s."""
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    deadline = time.perf_counter() + budget_s
    for _ in range(reps):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        if time.perf_counter() > deadline and len(times) >= 1:
            break
    return statistics.median(times)


def _is_aten(evt) -> bool:
    return evt.name.startswith("aten::")


def count_launches(fn: Callable[[], object], device: str) -> dict[str, int]:
    """{"cuda_kernels": n} on CUDA; {"aten_ops": n, "triton_launches": m} on a CPU (see the module doc)."""
    from torch.profiler import ProfilerActivity, profile

    from fidelity.impl.triton import _common

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    before = sum(_common.LAUNCHES.values())
    sync(device)
    with profile(activities=activities) as prof:
        fn()
        sync(device)
    triton_launches = sum(_common.LAUNCHES.values()) - before
    events = prof.events()
    if device == "cuda":
        kernels = [e for e in events if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA
                   and not e.name.lower().startswith(("memcpy", "memset"))]
        return {"cuda_kernels": len(kernels), "triton_launches": triton_launches}
    outermost = 0
    for e in events:
        if not _is_aten(e):
            continue
        parent = e.cpu_parent
        while parent is not None and not _is_aten(parent):
            parent = parent.cpu_parent
        outermost += parent is None
    return {"aten_ops": outermost, "triton_launches": triton_launches}


@dataclass
class Row:
    """One configuration measured on both paths."""

    config: dict
    bytes_fwd: int
    bytes_fwd_bwd: int
    fused_ms: dict = field(default_factory=dict)   # "fwd", "fwd+bwd"
    torch_ms: dict = field(default_factory=dict)
    fused_launches: dict = field(default_factory=dict)
    torch_launches: dict = field(default_factory=dict)

    def ratio(self, mode: str) -> float:
        return self.torch_ms[mode] / self.fused_ms[mode]

    def bandwidth_tbs(self, mode: str) -> float:
        nbytes = self.bytes_fwd if mode == "fwd" else self.bytes_fwd_bwd
        return nbytes / (self.fused_ms[mode] * 1e-3) / 1e12


def measure_paths(row: Row, paths: dict[str, tuple[Callable[[], object], Callable[[], object]]], device: str, *,
                  warmup: int, reps: int) -> None:
    """Time and count launches of each path's (forward, forward_backward) into `row`;
    `paths` holds "fused" and "torch"."""
    for name, (forward, forward_backward) in paths.items():
        calls = {"fwd": forward, "fwd+bwd": forward_backward}
        ms = {mode: time_call(fn, device, warmup=warmup, reps=reps) for mode, fn in calls.items()}
        launches = {mode: count_launches(fn, device) for mode, fn in calls.items()}
        setattr(row, f"{name}_ms", ms)
        setattr(row, f"{name}_launches", launches)


def report(name: str, title: str, rows: list[Row], device: str, peak_tbs: float | None, quick: bool,
           out: Path | None) -> None:
    """Print the table; with --out, also write NAME.txt and NAME.json there."""
    text = render(title, rows, device, peak_tbs, quick)
    print(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
        write_json(out / f"{name}.json", title, rows, device, peak_tbs, quick)


def device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device == "cuda" else "cpu (Triton interpreter)"


def render(title: str, rows: list[Row], device: str, peak_tbs: float | None, quick: bool, name: str | None = None) -> str:
    lines = [title]
    if device == "cpu":
        lines.append("  device: cpu, Triton INTERPRETER: timings are CI costs, not speed claims; "
                     "launches: outermost aten ops per call (torch path) / aten ops + Triton launches (fused)")
    else:
        peak = f"{peak_tbs:g} TB/s" if peak_tbs else "unknown (pass --peak-tbs)"
        lines.append(f"  device: {name or device_name(device)}, peak bandwidth {peak}; launches: CUDA kernels per call")
    lines.append("  ratios: torch time / fused time, both measured in this run" + (" (--quick sizes)" if quick else ""))
    for mode in ("fwd", "fwd+bwd"):
        lines.append(f"  -- {mode}")
        for r in rows:
            cfg = " ".join(f"{k}={v}" for k, v in r.config.items())
            if device == "cuda":
                fl = r.fused_launches.get(mode, {}).get("cuda_kernels")
                tl_ = r.torch_launches.get(mode, {}).get("cuda_kernels")
                bw = r.bandwidth_tbs(mode)
                eff = f" eff {bw:.2f} TB/s" + (f" = {100 * bw / peak_tbs:.0f}% of peak" if peak_tbs else "")
            else:
                f_ = r.fused_launches.get(mode, {})
                fl = f"{f_.get('aten_ops')} aten + {f_.get('triton_launches')} triton"
                tl_ = f"{r.torch_launches.get(mode, {}).get('aten_ops')} aten"
                eff = ""
            lines.append(f"  {cfg:34s} fused {r.fused_ms[mode]:9.3f} ms  torch {r.torch_ms[mode]:9.3f} ms  "
                         f"ratio {r.ratio(mode):7.3g}x  launches fused {fl} / torch {tl_}{eff}")
    return "\n".join(lines)


def write_json(path: Path, title: str, rows: list[Row], device: str, peak_tbs: float | None, quick: bool) -> None:
    payload = {"title": title, "device": device, "quick": quick, "peak_tbs": peak_tbs,
               "device_name": device_name(device),
               "torch": torch.__version__, "rows": []}
    try:
        import triton

        payload["triton"] = triton.__version__
    except ImportError:  # pragma: no cover
        payload["triton"] = None
    for r in rows:
        d = asdict(r)
        d["ratio"] = {m: r.ratio(m) for m in r.fused_ms}
        if device == "cuda":
            d["effective_tbs"] = {m: r.bandwidth_tbs(m) for m in r.fused_ms}
        payload["rows"].append(d)
    path.write_text(json.dumps(payload, indent=1), encoding="utf-8")


def pick_device(requested: str | None) -> str:
    """cuda when available (and the kernels compiled), else cpu under the interpreter."""
    from fidelity.impl.triton import _common

    if requested:
        return requested
    return "cuda" if torch.cuda.is_available() and not _common.INTERPRETED else "cpu"


def common_parser(doc: str, name: str) -> argparse.ArgumentParser:
    """The options every kernel benchmark takes; a benchmark adds its own sizes."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (the CPU/CI mode)")
    p.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available")
    p.add_argument("--tokens", type=int, nargs="+", help="override the token counts")
    p.add_argument("--peak-tbs", type=float, help="peak memory bandwidth in TB/s (default: known devices)")
    p.add_argument("--out", type=Path, help=f"directory for {name}.json and .txt")
    return p


def interpreter_unless_cuda(requested: str | None) -> None:
    """Without a CUDA run, kernels run in Triton's interpreter: set it before they are defined."""
    if requested != "cuda" and not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
