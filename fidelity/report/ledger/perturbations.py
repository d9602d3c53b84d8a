"""The ledger's perturbations: one row per perturbation (its status by current evidence, the gates
that caught it, those listed but not red) and its red-to-green rows, OBSERVED or PREDICTED ONLY.
"""
from __future__ import annotations

from pathlib import Path

from fidelity.evidence.outcome import Outcome
from fidelity.report.ledger.terms import OBSERVED, OBSERVED_STALE, PREDICTED_ONLY, perturbation_key
from fidelity.report.shown_paths import display_path


def _perturbation_status(current: list[dict], any_records: bool) -> str:
    if not current:
        return "stale" if any_records else "not run"
    outcomes = {e["outcome"] for e in current}
    if any(e["accepts"] for e in current):
        return "caught"
    if any(e["outcome"] == Outcome.RED_BY_ASSERTION and e["green_after"] is True for e in current):
        return "red, after too few clean runs"
    if Outcome.RED_BY_ASSERTION in outcomes:
        return "red, not green after"
    if Outcome.SURVIVED in outcomes:
        return "survived"
    if Outcome.RED_OTHER in outcomes:
        return "red for another reason only"
    return "skipped"


def perturbation_rows(cat, entries: list[dict], by_pert: dict[str, list[dict]], diffs: dict[str, str],
                   repo_root: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    ids = list(cat.perturbations) + [e["perturbation"] for e in entries if e["perturbation"] not in cat.perturbations]
    for pid in sorted(dict.fromkeys(ids), key=perturbation_key):
        item = cat.perturbations.get(pid)
        mine = by_pert.get(pid, [])
        current = [e for e in mine if e["current"]]
        data = item.data if item else {}
        caught = sorted(e["gate"] for e in current if e["accepts"])
        listed = list(data.get("gates", []))
        out[pid] = {
            "id": pid, "in_specs": item is not None,
            "paper": item.paper if item else None,
            "title": data.get("title") or (mine[0]["title"] if mine else ""),
            "target": data.get("target") or (mine[0]["target"] if mine else ""),
            "edits": data.get("edits", []),
            "covers": list(data.get("covers", [])),
            "listed_gates": listed,
            "predicted": [{"gate": p["gate"], "reading": p["reading"], "oracle": p.get("oracle"),
                           "note": p.get("note", "")} for p in data.get("predicted", [])],
            "defined_at": f"{display_path(item.file, repo_root)}:{item.line}" if item else None,
            "status": _perturbation_status(current, bool(mine)),
            "caught_by": caught,
            "listed_not_red": sorted(g for g in listed if g not in caught and any(e["gate"] == g for e in current)),
            "outcomes": {e["gate"]: e["outcome"] for e in sorted(current, key=lambda e: e["gate"])},
            "stale_records": len(mine) - len(current),
            "diff": diffs.get(pid),
        }
    return out


def red_to_green(pert: dict, mine: list[dict]) -> list[dict]:
    """The perturbation's rows; `mine`: its evidence entries."""
    rows = []
    spec_pred = {p["gate"]: p for p in pert["predicted"]}
    seen = set()
    for e in sorted(mine, key=lambda e: e["gate"]):
        seen.add(e["gate"])
        pred = e["predicted"] or ({"reading": spec_pred[e["gate"]]["reading"], "note": spec_pred[e["gate"]]["note"]}
                                  if e["gate"] in spec_pred else None)
        if not (e["outcome"] in (Outcome.RED_BY_ASSERTION, Outcome.RED_OTHER) or pred is not None or e["listed"]):
            continue
        rows.append({"perturbation": pert["id"], "title": pert["title"], "gate": e["gate"], "outcome": e["outcome"],
                     "observed": e["reading"] if e["outcome"] == Outcome.RED_BY_ASSERTION else None,
                     "predicted": None if pred is None else pred["reading"],
                     "predicted_note": "" if pred is None else pred.get("note", ""),
                     "green_after": e["green_after"], "when": e["recorded_at"],
                     "basis": OBSERVED if e["current"] else OBSERVED_STALE,
                     "stale_reasons": e["stale_reasons"], "detail": e["detail"]})
    for gate, p in sorted(spec_pred.items()):
        if gate in seen:
            continue
        rows.append({"perturbation": pert["id"], "title": pert["title"], "gate": gate, "outcome": None,
                     "observed": None, "predicted": p["reading"], "predicted_note": p.get("note", ""),
                     "green_after": None, "when": None, "basis": PREDICTED_ONLY, "stale_reasons": [],
                     "detail": "no evidence record: run `fidelity perturb " + pert["id"] + "`"})
    return rows
