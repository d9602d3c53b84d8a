"""Evidence: one JSON record per gate x perturbation (evidence rules 4-6).

Path: `<reports_dir>/evidence/<perturbation id>/<gate id sanitised>.json`,
written atomically (temporary file in the same directory, then os.replace),
deterministic (sorted keys, indent 1, strict JSON: a non-finite reading is
the string "NaN" / "Infinity" / "-Infinity").

A record (SCHEMA "fidelity.perturb.evidence/1"):
  schema, perturbation, title, spec_file, target, target_file, edits,
  edits_sha256, diff                      what was perturbed, and how
  gate, gate_file, equations, listed      the gate; listed = named in the
                                          perturbation as one that must go red
  outcome        red_by_assertion | red_other | survived | skipped
  detail         one line: the failing instance and exception, or why red_other
  reading        OBSERVED reading of the first instance red by assertion, or null
  predicted      {"reading", "note"} from the perturbation, or null; kept apart
                 from `reading` and never merged into it
  instances      per test instance: nodeid, outcome, phase, kind, exc_type,
                 message, raised_in, skip_reason, readings
  green_after    the gate passed again without the patch, in the run after
  patch_served   times the child imported the patched module (0: no gate
                 imported the target; null: no child ran)
  hashes         {"gate_file": sha256, "target_source": sha256 of the ORIGINAL
                 source, "fixtures": {path: sha256}} (paths relative to the repo
                 root where they lie inside it)
  versions       python, torch, pytest, fidelity, platform
  recorded_at    UTC, ISO 8601

A record is CURRENT while the gate file, the target's source and every fixture
it read hash as recorded (and, when the perturbation is given, its edits are
unchanged). A gate is ACCEPTED with at least one current record whose outcome
is red_by_assertion and green_after is true.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import re
from importlib import metadata
from pathlib import Path

from fidelity.perturb import jsonio

SCHEMA = "fidelity.perturb.evidence/1"
EVIDENCE_DIR = "evidence"


def sanitise(name: str) -> str:
    """A file-name-safe form of a gate or perturbation id."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return s or "_"


def evidence_dir(reports_dir: str | os.PathLike, perturbation_id: str) -> Path:
    return Path(reports_dir) / EVIDENCE_DIR / sanitise(perturbation_id)


def evidence_path(reports_dir: str | os.PathLike, perturbation_id: str, gate: str) -> Path:
    return evidence_dir(reports_dir, perturbation_id) / f"{sanitise(gate)}.json"


def edits_sha256(target: str, edits: list[dict]) -> str:
    blob = json.dumps({"target": target, "edits": edits}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def rel_to_root(path: str | os.PathLike, repo_root: str | os.PathLike) -> str:
    """`path` relative to the repo root (POSIX separators) if inside it, else absolute."""
    p = Path(os.path.abspath(path))
    root = Path(os.path.abspath(repo_root))
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return str(p)


def resolve(path: str, repo_root: str | os.PathLike) -> Path:
    p = Path(path)
    return p if p.is_absolute() else Path(repo_root) / p


def versions() -> dict:
    def v(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    import fidelity

    return {
        "python": platform.python_version(),
        "torch": v("torch"),
        "pytest": v("pytest"),
        "fidelity": getattr(fidelity, "__version__", None),
        "platform": platform.platform(),
    }


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def write_record(reports_dir: str | os.PathLike, record: dict) -> Path:
    """Write one record atomically; return its path."""
    path = evidence_path(reports_dir, record["perturbation"], record["gate"])
    jsonio.write_json(path, record)
    return path


def load_all(reports_dir: str | os.PathLike) -> list[dict]:
    """Every evidence record under reports_dir, sorted by (perturbation, gate).
    Files that are not valid records are skipped."""
    root = Path(reports_dir) / EVIDENCE_DIR
    out = []
    if not root.is_dir():
        return out
    for f in sorted(root.glob("*/*.json")):
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and rec.get("schema") == SCHEMA:
            out.append(rec)
    out.sort(key=lambda r: (r["perturbation"], r["gate"]))
    return out


def staleness(record: dict, repo_root: str | os.PathLike, perturbation: dict | None = None) -> list[str]:
    """Why `record` is no longer current (empty list: it is current)."""
    reasons = []
    if record.get("schema") != SCHEMA:
        return [f"schema {record.get('schema')!r} is not {SCHEMA!r}"]
    hashes = record.get("hashes") or {}
    checks = [("gate file", record.get("gate_file"), hashes.get("gate_file")),
              ("target source", record.get("target_file"), hashes.get("target_source"))]
    checks += [("fixture", path, sha) for path, sha in sorted((hashes.get("fixtures") or {}).items())]
    for what, path, sha in checks:
        if not path or not sha:
            reasons.append(f"{what}: no hash recorded")
            continue
        now = jsonio.sha256_file(resolve(path, repo_root))
        if now is None:
            reasons.append(f"{what} {path} is missing")
        elif now != sha:
            reasons.append(f"{what} {path} changed")
    if perturbation is not None:
        if perturbation.get("id") != record.get("perturbation"):
            reasons.append(f"record is for {record.get('perturbation')}, not {perturbation.get('id')}")
        elif edits_sha256(perturbation.get("target", ""), perturbation.get("edits", [])) != record.get("edits_sha256"):
            reasons.append("the perturbation's target or edits changed")
    return reasons


def is_current(record: dict, repo_root: str | os.PathLike, perturbation: dict | None = None) -> bool:
    return not staleness(record, repo_root, perturbation)


def _summary(record: dict, reports_dir: str | os.PathLike, repo_root: str | os.PathLike) -> dict:
    return {
        "perturbation": record["perturbation"],
        "outcome": record["outcome"],
        "reading": record.get("reading"),
        "predicted": record.get("predicted"),
        "green_after": record.get("green_after"),
        "path": rel_to_root(evidence_path(reports_dir, record["perturbation"], record["gate"]), repo_root),
    }


def acceptance(reports_dir: str | os.PathLike, repo_root: str | os.PathLike) -> dict[str, dict]:
    """gate -> {"accepted", "current_evidence": [...], "stale": [...]} over every
    record in reports_dir. Entries: perturbation, outcome, reading, predicted,
    green_after, path (and `reasons` for stale ones). Gates with no record at
    all are absent: the caller knows its gates and treats absent as not accepted."""
    out: dict[str, dict] = {}
    for rec in load_all(reports_dir):
        g = out.setdefault(rec["gate"], {"accepted": False, "current_evidence": [], "stale": []})
        reasons = staleness(rec, repo_root)
        entry = _summary(rec, reports_dir, repo_root)
        if reasons:
            g["stale"].append(dict(entry, reasons=reasons))
        else:
            g["current_evidence"].append(entry)
            if rec["outcome"] == "red_by_assertion" and rec.get("green_after") is True:
                g["accepted"] = True
    return dict(sorted(out.items()))
