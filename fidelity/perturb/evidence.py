"""Evidence: one JSON record per gate x perturbation (evidence rules 4-6).

Path: `<evidence root>/<perturbation id>/<gate id sanitised>.json` (every function
here takes the root); the project's evidence root is `<reports_dir>/evidence`
(evidence_root), a `--file` catalogue's its own,
`<reports_dir>/catalogues/<file stem>/evidence` (catalogue_evidence_root), so its
ids never overwrite the project's records. Each record is
written atomically (temporary file in the same directory, then os.replace),
deterministic (sorted keys, indent 1, strict JSON: a non-finite reading is
the string "NaN" / "Infinity" / "-Infinity").

A record (SCHEMA "fidelity.perturb.evidence/1"):
  schema, perturbation, title, spec_file, target, target_file, edits,
  edits_sha256, diff                      what was perturbed, and how; target is the
                                          module's dotted name, target_file its path
                                          as the module name spells it (no venv, no
                                          site-packages: the same record everywhere)
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
  clean_runs     unpatched runs of the gate's instances before the patch, each in its own
                 child, all green with bit-identical readings (clean_runs.py)
  patch_served   times the child imported the patched module (0: no gate
                 imported the target; null: no child ran)
  hashes         {"gate_file": sha256, "target_source": sha256 of the ORIGINAL
                 source, "fixtures": {path: sha256}} (paths relative to the repo
                 root where they lie inside it)
  versions       python, torch, pytest, fidelity, platform
  recorded_at    UTC, ISO 8601
  record_sha256  sha256 of the record's canonical JSON without this field (record_hash):
                 a record edited by hand no longer matches it, and is named as such

A record is CURRENT while the gate file, the target's source and every fixture
it read hash as recorded (the target is found again by its module name on the
import path a child of this project has now, wherever it is installed) (and, when the perturbation is given, its edits are
unchanged). A gate is ACCEPTED with at least one current record whose outcome
is red_by_assertion, green_after true and clean_runs at least clean_runs.CLEAN_RUNS
(`accepts`: the one rule, which check and report apply too).
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
CATALOGUES_DIR = "catalogues"


def sanitise(name: str) -> str:
    """A file-name-safe form of a gate or perturbation id."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return s or "_"


def evidence_root(reports_dir: str | os.PathLike) -> Path:
    """The project's evidence root: `<reports_dir>/evidence`."""
    return Path(reports_dir) / EVIDENCE_DIR


def catalogue_evidence_root(reports_dir: str | os.PathLike, catalogue_file: str | os.PathLike) -> Path:
    """A `--file` catalogue's own evidence root, `<reports_dir>/catalogues/<file stem>/evidence`:
    its ids live in their own namespace, so its records must not land among the project's."""
    return Path(reports_dir) / CATALOGUES_DIR / sanitise(Path(catalogue_file).stem) / EVIDENCE_DIR


def record_dir(root: str | os.PathLike, perturbation_id: str) -> Path:
    """One perturbation's records under an evidence root."""
    return Path(root) / sanitise(perturbation_id)


def record_path(root: str | os.PathLike, perturbation_id: str, gate: str) -> Path:
    return record_dir(root, perturbation_id) / f"{sanitise(gate)}.json"


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


def record_hash(record: dict) -> str:
    """The record's own hash: its canonical JSON (jsonio.dumps) without `record_sha256`."""
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    return hashlib.sha256(jsonio.dumps(body).encode("utf-8")).hexdigest()


def write_record(root: str | os.PathLike, record: dict) -> Path:
    """Write one record atomically under the evidence root `root`, stamped with its own hash; return its path."""
    path = record_path(root, record["perturbation"], record["gate"])
    jsonio.write_json(path, {**record, "record_sha256": record_hash(record)})
    return path


def load_all(root: str | os.PathLike) -> list[dict]:
    """Every valid evidence record under the evidence root `root`, sorted by (perturbation, gate).
    What is not a valid record is left out here: `scan` says which files and why."""
    return scan(root)[0]


RECREATE = "run `fidelity perturb --stale` to re-create it"


def scan(root: str | os.PathLike) -> tuple[list[dict], list[tuple[Path, str, str]]]:
    """(the valid records under `root` sorted by (perturbation, gate), [(file, why, what to do) for
    every file that is not one]): unreadable, truncated or not JSON, another schema, a field missing
    or of the wrong type, or a record lying where another perturbation's or gate's would (moved or
    copied). A bad file is never skipped in silence: check names it; `perturb --stale` re-creates a
    record in its own place (its gate has no valid record, so the perturbation runs again), and a
    copy lying elsewhere is to be deleted."""
    root = Path(root)
    records: list[dict] = []
    bad: list[tuple[Path, str]] = []
    if not root.is_dir():
        return records, bad
    for f in sorted(root.glob("*/*.json")):
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            bad.append((f, f"unreadable: {exc}", RECREATE))
            continue
        except ValueError as exc:
            bad.append((f, f"not JSON (truncated?): {exc}", RECREATE))
            continue
        why = _invalid(rec, f, root)
        if why is None:
            records.append(rec)
        else:
            bad.append((f, *why))
    records.sort(key=lambda r: (r["perturbation"], r["gate"]))
    return records, bad


# field -> the types a valid record gives it
_FIELDS = {"perturbation": (str,), "gate": (str,), "gate_file": (str,), "target": (str,), "outcome": (str,),
           "hashes": (dict,), "green_after": (bool, type(None)), "edits_sha256": (str,)}


def _invalid(rec: object, file: Path, root: Path) -> tuple[str, str] | None:
    """(why `rec`, read from `file`, is not a valid record under `root`, what to do), or None."""
    from fidelity.perturb.outcomes import OUTCOMES

    if not isinstance(rec, dict):
        return f"not a record (a JSON {type(rec).__name__}, not an object)", RECREATE
    if rec.get("schema") != SCHEMA:
        return f"schema {rec.get('schema')!r}, not {SCHEMA!r}", RECREATE
    for key, types in _FIELDS.items():
        if key not in rec:
            return f"no {key!r} field", RECREATE
        if not isinstance(rec[key], types):
            return f"{key!r} is a {type(rec[key]).__name__}", RECREATE
    if rec["outcome"] not in OUTCOMES:
        return f"outcome {rec['outcome']!r} is none of {', '.join(OUTCOMES)}", RECREATE
    if "record_sha256" not in rec:
        return "it carries no record_sha256 (written before records did, or not by the runner)", RECREATE
    if rec["record_sha256"] != record_hash(rec):
        return "its content does not match its record_sha256 (edited by hand?)", RECREATE
    own = record_path(root, rec["perturbation"], rec["gate"])
    if file != own:
        return (f"it records {rec['perturbation']} x {rec['gate']}, whose record lies at "
                f"{own.relative_to(root).as_posix()} (moved or copied)", "delete this copy")
    return None


def staleness(record: dict, repo_root: str | os.PathLike, perturbation: dict | None = None) -> list[str]:
    """Why `record` is no longer current (empty list: it is current)."""
    reasons = []
    if record.get("schema") != SCHEMA:
        return [f"schema {record.get('schema')!r} is not {SCHEMA!r}"]
    hashes = record.get("hashes") or {}
    checks = [("gate file", record.get("gate_file"), hashes.get("gate_file"))]
    checks += [("fixture", path, sha) for path, sha in sorted((hashes.get("fixtures") or {}).items())]
    reasons += _target_staleness(record.get("target"), hashes.get("target_source"), repo_root)
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


def _target_staleness(module: str | None, sha: str | None, repo_root) -> list[str]:
    """Why the target's source no longer hashes as recorded: it is located again by module name."""
    from fidelity.perturb import locate

    if not module or not sha:
        return ["target source: no module or hash recorded"]
    try:
        path = locate.find_source(module, locate.child_search_path(str(repo_root)))
    except locate.TargetNotFound as exc:
        return [f"target {module} cannot be found on this import path: {exc}"]
    if jsonio.sha256_file(path) != sha:
        return [f"target source {module} changed"]
    return []


def accepts(record: dict) -> bool:
    """Whether a (current) record accepts its gate: red by the gate's own assertion under the patch,
    green again without it, after enough clean runs that a gate failing in half of all runs would
    have been refused (clean_runs.py)."""
    from fidelity.perturb.clean_runs import CLEAN_RUNS

    return (record.get("outcome") == "red_by_assertion" and record.get("green_after") is True
            and isinstance(record.get("clean_runs"), int) and record["clean_runs"] >= CLEAN_RUNS)


def is_current(record: dict, repo_root: str | os.PathLike, perturbation: dict | None = None) -> bool:
    return not staleness(record, repo_root, perturbation)


def _summary(record: dict, root: str | os.PathLike, repo_root: str | os.PathLike) -> dict:
    return {
        "perturbation": record["perturbation"],
        "outcome": record["outcome"],
        "reading": record.get("reading"),
        "predicted": record.get("predicted"),
        "green_after": record.get("green_after"),
        "path": rel_to_root(record_path(root, record["perturbation"], record["gate"]), repo_root),
    }


def acceptance(root: str | os.PathLike, repo_root: str | os.PathLike) -> dict[str, dict]:
    """gate -> {"accepted", "current_evidence": [...], "stale": [...]} over every
    record under the evidence root. Entries: perturbation, outcome, reading, predicted,
    green_after, path (and `reasons` for stale ones). Gates with no record at
    all are absent: the caller knows its gates and treats absent as not accepted."""
    out: dict[str, dict] = {}
    for rec in load_all(root):
        g = out.setdefault(rec["gate"], {"accepted": False, "current_evidence": [], "stale": []})
        reasons = staleness(rec, repo_root)
        entry = _summary(rec, root, repo_root)
        if reasons:
            g["stale"].append(dict(entry, reasons=reasons))
        else:
            g["current_evidence"].append(entry)
            if accepts(rec):
                g["accepted"] = True
    return dict(sorted(out.items()))
