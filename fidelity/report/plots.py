"""The ledger's plots, as PNG bytes (256 colours): deterministic, drawn only when asked.

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
- matrix_series: gates x perturbations, one outcome code per cell (drawn as each paper's HTML grid,
  gatematrix.py: a PNG of all 137 x 201 cells had labels 3 px tall);
- separation_series: every computed separation.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

from fidelity.evidence.outcome import Outcome

NAMES = ("sinkhorn_error", "composite_distance", "separation")
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
    from fidelity.report.ledger.terms import perturbation_key

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
    """Render with Agg (attached to this figure only; no global backend switch), no timestamp or software tag,
    then to 256 colours (Pillow, which matplotlib requires): a plot has a few colours and their antialiased
    edges, so it looks the same at a third of the bytes of Agg's RGBA (issue 52: the page's weight)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    rgb = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    out = io.BytesIO()
    rgb.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, format="PNG",
                                                                                          optimize=True)
    return out.getvalue()


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
        seps = separation_series(ledger)
        out["separation"] = _png(_separation(seps)) if seps else \
            "not computed: no gate states its tolerance (a reading named 'rtol') or records a separation"
    return out, None
