"""The ledger's plots, as PNG bytes: deterministic, drawn only when asked.

matplotlib is imported inside `draw_all` and nowhere else, so `fidelity --help`
and the Markdown ledger never pay for it. Figures are built with the
object-oriented API (no pyplot, no global state), rendered by Agg, and saved
with the "Software" metadata removed so the same data gives the same bytes.

The data behind each plot is gathered by the *_series functions (no matplotlib),
so it can be checked on its own; the report computes none of it (no oracle runs here):
- sinkhorn_series: fixture sinkhorn.plot_trajectories's curves, for each sinkhorn
  fixture with a limit and each of its logits inputs max |M(t) - limit| (the oracle's
  trajectory at 60 digits, written by its builder in fidelity/fixtures/sinkhorn.py);
- composite_series: fixture mhc.composite_perturbed's distance ||H^T - J/n||_2
  against T, and its predictions for a composite taken once;
- matrix_series: gates x perturbations, one outcome code per cell;
- separation_series: every computed separation.
"""
from __future__ import annotations

import io
import json
import math
from pathlib import Path

from fidelity.evidence.outcome import Outcome

NAMES = ("sinkhorn_error", "composite_distance", "gate_matrix", "separation")
SINKHORN_FIXTURE = "sinkhorn.plot_trajectories"
ZERO_BAND = 10.0 ** -3   # a log axis has no 0: an exact zero is drawn in a marked band this far below the data
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


# ---------------------------------------------------------------- data

def _load(path: Path) -> dict | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def sinkhorn_series(fixtures_dir: Path) -> list[dict]:
    """[{fixture, input, t: [1..t_max], error: [float]}] from fixture sinkhorn.plot_trajectories ([] without it)."""
    from fidelity.fixtures import store

    try:
        fx = store.read(Path(fixtures_dir) / f"{SINKHORN_FIXTURE}.json")
    except store.FixtureError:
        return []
    curves, errors = fx["expected"]["curves"]["exact"], fx["expected"]["error"]["float64"]
    return [{"fixture": c["fixture"], "input": c["input"], "t": c["t"], "error": e} for c, e in zip(curves, errors)]


def composite_series(fixtures_dir: Path) -> dict | None:
    fx = _load(Path(fixtures_dir) / "mhc.composite_perturbed.json")
    if not fx:
        return None
    T = fx["inputs"]["T"]
    series = {}
    for key, entry in sorted(fx["expected"].items()):
        if isinstance(entry, dict) and "distance" in entry:
            series[key] = [float(x) for x in entry["distance"]["digits"]]
    predictions = {}
    for name, p in sorted(fx.get("predictions", {}).items()):
        if p.get("field", "").endswith(".distance") and "digits" in p:
            predictions[name] = {"field": p["field"], "values": [float(x) for x in p["digits"]]}
    return {"T": T, "distance": series, "predictions": predictions}


MATRIX_CODES = {
    "caught": ("R", "red by assertion, green after"),
    "red_not_green": ("r", "red by assertion, NOT green after"),
    Outcome.RED_OTHER.value: ("O", Outcome.RED_OTHER.words),
    Outcome.SURVIVED.value: ("S", Outcome.SURVIVED.words),
    Outcome.SKIPPED.value: ("K", Outcome.SKIPPED.words),
    "stale": ("x", "stale record only"),
    "predicted": ("P", "predicted only (no run)"),
}


def matrix_series(ledger: dict) -> dict:
    """{"gates": [...], "perturbations": [...], "cells": {gate: {pid: code}}} from the ledger."""
    from fidelity.report.model import perturbation_key

    cells: dict[str, dict[str, str]] = {}
    for e in ledger["evidence"]:
        row = cells.setdefault(e["gate"], {})
        if not e["current"]:
            row.setdefault(e["perturbation"], "stale")
            continue
        if e["outcome"] == Outcome.RED_BY_ASSERTION:
            code = "caught" if e["green_after"] is True else "red_not_green"
        else:
            code = e["outcome"]
        row[e["perturbation"]] = code
    for p in ledger["perturbations"].values():
        for pred in p["predicted"]:
            cells.setdefault(pred["gate"], {}).setdefault(p["id"], "predicted")
    gates = sorted(cells)
    perts = sorted({pid for row in cells.values() for pid in row}, key=perturbation_key)
    return {"gates": gates, "perturbations": perts, "cells": cells}


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def separation_series(ledger: dict) -> list[dict]:
    from fidelity.evidence import jsonio

    rows = []
    for r in ledger["separations"]:
        if r["separation"] is None:
            continue
        if r["fixture"]:
            label = f"{r['fixture']}: {r['prediction']}" + (f" [{r['field']}]" if r["field"] else "")
        else:  # a gate's own reading: the test function's name is enough to find it
            label = f"{_clip(r['gate'].split('::')[-1], 60)}: {r['prediction']}"
        rows.append({"label": label, "separation": jsonio.decode_float(r["separation"])})
    return sorted(rows, key=lambda r: r["label"])


# ---------------------------------------------------------------- drawing

def _png(fig) -> bytes:
    """Render with Agg (attached to this figure only; no global backend switch), no timestamp or software tag."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def _sinkhorn(series: list[dict]):
    from matplotlib.figure import Figure

    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(9, 4.8))
    ax = fig.add_subplot()
    positive = [e for s in series for e in s["error"] if e > 0]
    zero_at = min(positive, default=1.0) * ZERO_BAND
    for i, s in enumerate(series):
        # curves that coincide (the extreme offsets) stay apart by marker and line style
        ax.semilogy(s["t"], [e if e > 0 else zero_at for e in s["error"]], marker=MARKERS[i % len(MARKERS)],
                    linestyle=LINESTYLES[i % len(LINESTYLES)], markersize=4, markerfacecolor="none",
                    label=f"{s['fixture']} ({s['input']})")
    if any(e == 0 for s in series for e in s["error"]):
        ax.axhspan(zero_at / 3, zero_at * 3, color="0.9", zorder=0)
        ax.text(0.2, zero_at * 1.5, "exactly 0 (a log axis has no 0)", fontsize=8, color="0.35")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))   # iterations are whole numbers
    ax.axhline(2.0 ** -23, color="0.45", linestyle=":", linewidth=1)
    ax.axhline(2.0 ** -52, color="0.45", linestyle="--", linewidth=1)
    ax.text(0.2, 2.0 ** -23 * 2, "eps(float32)", fontsize=8, color="0.35")
    ax.text(0.2, 2.0 ** -52 * 2, "eps(float64)", fontsize=8, color="0.35")
    ax.set_xlabel("iteration t (one column then one row normalisation)")
    ax.set_ylabel("max |M(t) - limit|  (oracle, 60 digits)")
    ax.set_title("Sinkhorn-Knopp error against iteration (the floor near 1e-40 is the fixtures' 40 stored digits)",
                 fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def _composite(data: dict):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 4.5))
    ax = fig.add_subplot()
    for key, values in data["distance"].items():
        ax.semilogy(data["T"], values, marker="o", markersize=4, label=f"{key}: ||H^T - J/n||_2 (oracle)")
    for name, p in data["predictions"].items():
        ax.semilogy(data["T"], p["values"], linestyle="--", linewidth=1.2,
                    label=f"prediction {name} (not an observation)")
    ax.set_xlabel("T (layers composed)")
    ax.set_ylabel("spectral distance to J/n")
    ax.set_title("mhc.composite_perturbed: the composite's distance to J/n against T")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


_MATRIX_COLOURS = {"caught": "#c0392b", "red_not_green": "#e8897f", "red_other": "#e59866", "survived": "#5d6d7e",
                   "skipped": "#d5dbe1", "stale": "#f7dc6f", "predicted": "#d7cdf5"}


MATRIX_HATCHED = ("stale", "predicted")   # no current run behind these cells: hatched as well as coloured
LETTER_MIN_PT = 9.0   # a cell narrower than this cannot hold its letter (fontsize 8) legibly
LABEL_MIN_PT = 9.0    # tick labels (fontsize 7-8) closer than this overlap into a smear


def _label_step(cell_pt: float) -> int:
    """Label every n-th row or column so that neighbouring tick labels never overlap."""
    return max(1, math.ceil(LABEL_MIN_PT / cell_pt))


def _matrix_layout(gates: list[str], perts: list[str]) -> tuple[tuple[float, float], dict]:
    """(figure size in inches, subplots_adjust margins): fixed, from the label lengths (no tight_layout)."""
    label = max(len(g.split("/")[-1]) for g in gates)
    left_in, right_in, top_in, bottom_in = 0.3 + 0.055 * label, 2.6, 0.45, 0.75
    height = max(2.8, 0.32 * len(gates) + 1.8)
    width = max(6.0, 0.55 * len(perts) + left_in + right_in)
    w, h = min(width, 18), min(height, 40)
    return (w, h), {"left": left_in / w, "right": 1 - right_in / w, "top": 1 - top_in / h, "bottom": bottom_in / h}


def _matrix_cells(ax, codes: list[list[str | None]]) -> None:
    """Every cell in one mesh (its edges the grid; one patch per cell cost ~20 s at 133 x 196), and
    one hatched collection over the cells with no current run behind them."""
    import numpy as np
    from matplotlib.collections import PatchCollection
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Rectangle

    colours = np.ones((len(codes), len(codes[0]), 3))        # white: no record and no prediction
    for i, row in enumerate(codes):
        for j, code in enumerate(row):
            if code is not None:
                colours[i, j] = to_rgb(_MATRIX_COLOURS[code])
    ax.pcolormesh(np.arange(len(codes[0]) + 1), np.arange(len(codes) + 1), colours, edgecolors="#e5e8ec",
                  linewidth=0.5)
    hatched = [Rectangle((j, i), 1, 1) for i, row in enumerate(codes) for j, c in enumerate(row)
               if c in MATRIX_HATCHED]
    if hatched:
        ax.add_collection(PatchCollection(hatched, facecolor="none", edgecolor="0.35", linewidth=0, hatch="//"))


def _matrix(data: dict):
    """The cells (_matrix_cells), each cell's letter when the cells are wide enough to hold it, and
    as many tick labels as fit; what is left out is said in the title."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    gates, perts = data["gates"], data["perturbations"]
    size, margins = _matrix_layout(gates, perts)
    fig = Figure(figsize=size)
    fig.subplots_adjust(**margins)
    ax = fig.add_subplot()
    codes = [[data["cells"][g].get(pid) for pid in perts] for g in gates]
    _matrix_cells(ax, codes)
    box = ax.get_position()
    cell_w, cell_h = box.width * size[0] * 72 / len(perts), box.height * size[1] * 72 / len(gates)
    lettered = cell_w >= LETTER_MIN_PT
    for i, row in enumerate(codes if lettered else []):
        for j, code in enumerate(row):
            if code is not None:
                ax.text(j + 0.5, i + 0.5, MATRIX_CODES[code][0], ha="center", va="center", fontsize=8,
                        color="white" if code in ("caught", "survived") else "black")
    ax.set_xlim(0, len(perts))
    ax.set_ylim(len(gates), 0)
    xstep, ystep = _label_step(cell_w), _label_step(cell_h)
    ax.set_xticks([j + 0.5 for j in range(0, len(perts), xstep)], perts[::xstep], fontsize=8,
                  rotation=0 if xstep == 1 and cell_w >= 30 else 90)
    ax.set_yticks([i + 0.5 for i in range(0, len(gates), ystep)], [g.split("/")[-1] for g in gates][::ystep],
                  fontsize=7)
    ax.tick_params(length=0)
    shown = [] if xstep == 1 else [f"one perturbation in {xstep} labelled"]
    shown += [] if ystep == 1 else [f"one gate in {ystep} labelled"]
    shown += [] if lettered else ["cells too narrow for their letters: the colours are the legend's"]
    ax.set_title("gates x perturbations: outcome of the evidence" + (f"\n({'; '.join(shown)})" if shown else ""),
                 fontsize=10)
    handles = [Patch(facecolor=_MATRIX_COLOURS[k], hatch="//" if k in MATRIX_HATCHED else None,
                     label=f"{c}: {text}") for k, (c, text) in MATRIX_CODES.items()]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _separation(rows: list[dict]):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, max(2.5, 0.3 * len(rows) + 1.5)))
    ax = fig.add_subplot()
    positive = [r["separation"] for r in rows if r["separation"] > 0]
    zero_at = min(min(positive, default=1.0), 1.0) * ZERO_BAND
    values = [r["separation"] if r["separation"] > 0 else zero_at for r in rows]
    colours = ["#c0392b" if r["separation"] < 10 else "#27864a" for r in rows]
    bars = ax.barh(range(len(rows)), values, color=colours)
    ax.set_xscale("log")
    for bar, r in zip(bars, rows):
        if r["separation"] == 0:   # a zero is said, not drawn as a short bar
            bar.set_hatch("xx")
            ax.text(zero_at * 1.3, bar.get_y() + bar.get_height() / 2, "0: no separation", va="center",
                    fontsize=7, color="#7d1512")
    if any(r["separation"] == 0 for r in rows):
        ax.axvspan(zero_at / 3, zero_at * 3, color="0.9", zorder=0)
    ax.axvline(10, color="black", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(rows)), [r["label"] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("separation (tolerances); under 10 (dashed) is weak")
    ax.set_title("separation margins")
    fig.tight_layout()
    return fig


def draw_all(ledger: dict, fixtures_dir: Path) -> tuple[dict, str | None]:
    """({name: PNG bytes, or a str saying why that plot is not drawn}, why no plot at all or None)."""
    try:
        import matplotlib
    except ImportError:
        return {}, "plots unavailable: matplotlib is not installed (pip install matplotlib)"
    out: dict[str, bytes | str] = {}
    rc = {"font.family": "DejaVu Sans", "svg.hashsalt": "fidelity", "figure.max_open_warning": 0,
          "path.simplify": False}
    with matplotlib.rc_context(rc):
        series = sinkhorn_series(fixtures_dir)
        out["sinkhorn_error"] = _png(_sinkhorn(series)) if series else f"fixture {SINKHORN_FIXTURE} not found"
        comp = composite_series(fixtures_dir)
        out["composite_distance"] = _png(_composite(comp)) if comp and comp["distance"] else \
            "fixture mhc.composite_perturbed not found"
        matrix = matrix_series(ledger)
        out["gate_matrix"] = _png(_matrix(matrix)) if matrix["gates"] else \
            "no evidence records and no predicted readings yet: run `fidelity perturb --all`"
        seps = separation_series(ledger)
        out["separation"] = _png(_separation(seps)) if seps else \
            "not computed: no gate states its tolerance (a reading named 'rtol') or records a separation"
    return out, None
