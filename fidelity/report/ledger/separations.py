"""The ledger's separations: how far each gate's recorded separation, and each fixture prediction
read through the loosest tolerance of a gate reading it, lies from passing (weak when close).
"""
from __future__ import annotations

from pathlib import Path

from fidelity.report import separation as sep
from fidelity.report.ledger.terms import first_sentence, paper_of_equation
from fidelity.report.shown_paths import display_path


def separation_rows(cat, gates: dict[str, dict], fixtures_dir: Path, repo_root: Path) -> list[dict]:
    import json

    from fidelity.evidence import jsonio

    rows = []
    for g in gates.values():
        for name, value in sorted(g["separations"].items()):
            rows.append({"gate": g["gate"], "fixture": None, "prediction": name, "field": None,
                         "relative_distance": None, "rtol": g["rtol"], "separation": jsonio.encode_float(value),
                         "source": "recorded by the gate", "weak": sep.is_weak(value), "readers": [g["gate"]],
                         "description": "",
                         "papers": g["papers"], "why_not": None})
    paths = sorted(Path(fixtures_dir).glob("*.json")) if Path(fixtures_dir).is_dir() else []
    for path in paths:
        try:
            fixture = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(fixture, dict) or "id" not in fixture:
            continue
        rel = display_path(path, repo_root)
        readers = [g for g in gates.values() if rel in g["fixtures_read"]]
        papers = sorted({paper_of_equation(cat, eq) for eq in fixture.get("equations", [])})
        for p in sep.fixture_predictions(fixture):
            rel = p["relative_distance"]
            row = {"fixture": fixture["id"], "prediction": p["prediction"], "field": p["field"],
                   "description": first_sentence(p["description"], 160),
                   "relative_distance": jsonio.encode_float(rel), "papers": papers,
                   "readers": [g["gate"] for g in readers], "gate": None, "rtol": None, "separation": None,
                   "weak": None, "source": "not computed", "why_not": None}
            with_rtol = [g for g in readers if g["rtol"] is not None]
            if rel is None:
                row["why_not"] = "the prediction and the expected value differ in shape"
            elif rel == 0:
                row.update(separation=0.0, weak=True, source="distance 0: no tolerance separates it")
            elif with_rtol:
                weakest = max(with_rtol, key=lambda g: (g["rtol"], g["gate"]))  # the loosest tolerance
                s = sep.in_tolerances(rel, weakest["rtol"])
                row.update(gate=weakest["gate"], rtol=weakest["rtol"], separation=jsonio.encode_float(s),
                           weak=sep.is_weak(s), source="fixture prediction / the loosest reading gate's rtol")
            elif readers:
                row["why_not"] = "no gate reading this fixture records its tolerance (a reading named 'rtol')"
            else:
                row["why_not"] = "no gate run or evidence record shows a gate reading this fixture"
            rows.append(row)
    return rows
