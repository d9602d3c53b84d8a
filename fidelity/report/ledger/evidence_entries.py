"""The ledger's evidence: one JSON-safe entry per evidence record, with its verdict
(fidelity.evidence.verdict), and each perturbation's diff.
"""
from __future__ import annotations

from pathlib import Path

from fidelity.report.shown_paths import display_path


def evidence_entries(cat, records: list, repo_root: Path, reports_dir: Path) -> list[dict]:
    """One JSON-safe entry per record, with its verdict (fidelity.evidence.verdict)."""
    from fidelity.evidence import paths, verdict
    from fidelity.report.gaterun import readings_summary

    fixture_shown: dict[str, str] = {}   # a few fixtures named by thousands of records: resolve each once

    def fixture(f: str) -> str:
        if f not in fixture_shown:
            fixture_shown[f] = display_path(paths.resolve(f, repo_root), repo_root)
        return fixture_shown[f]

    evidence_root = paths.evidence_root(reports_dir)
    out = []
    for j in verdict.judge(records, repo_root, {pid: dict(p.data) for pid, p in cat.perturbations.items()}):
        rec = j.record
        pred = rec.predicted
        out.append({
            "perturbation": rec.perturbation, "gate": rec.gate, "title": rec.title,
            "target": rec.target, "outcome": rec.outcome.value, "reading": rec.reading,
            "predicted": None if pred is None else {"reading": pred.get("reading"), "note": pred.get("note", "")},
            "green_after": rec.green_after, "recorded_at": rec.recorded_at,
            "accepts": rec.accepted, "clean_runs": rec.clean_runs,
            "versions": {k: rec.versions.get(k) for k in ("python", "torch", "fidelity")},
            "detail": rec.detail, "listed": rec.listed,
            "equations": sorted(rec.equations), "gate_file": rec.gate_file,
            "fixtures": sorted(fixture(f) for f in rec.fixtures),
            "current": j.current, "stale_reasons": list(j.stale_reasons),
            "path": display_path(paths.record_path(evidence_root, rec.perturbation, rec.gate), repo_root),
            **readings_summary(list(rec.instances)),
        })
    return out


def diffs_by_perturbation(records: list, entries: list[dict]) -> dict[str, str]:
    """perturbation -> its diff, from a current record when there is one."""
    diffs: dict[str, str] = {}
    for rec, e in sorted(zip(records, entries), key=lambda re_: not re_[1]["current"]):
        if rec.diff and rec.perturbation not in diffs:
            diffs[rec.perturbation] = rec.diff
    return diffs
