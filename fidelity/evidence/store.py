"""Writing and reading records: atomic, deterministic, never churning, never skipping a bad file.

A record is written atomically (a temporary file in the same directory, then os.replace) and
deterministically (sorted keys, indent 1, strict JSON: a non-finite reading is "NaN" / "Infinity" /
"-Infinity"). Re-running a perturbation whose outcome is unchanged leaves the file's bytes as they
were: only the clock and the platform string would differ, and they say nothing new.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from fidelity.evidence import jsonio
from fidelity.evidence.paths import record_dir, record_path
from fidelity.evidence.record import RECREATE, EvidenceRecord, InvalidRecord, record_hash

# what may differ between two runs that saw the same thing with the same versions of python, torch,
# pytest and fidelity: the clock and the machine's kernel string (a rewrite for them would only churn)
_CIRCUMSTANCES = ("recorded_at", "record_sha256")


def write_record(root: str | os.PathLike, record: dict) -> Path:
    """Write one record under the evidence root `root`, stamped with its own hash; return its path.

    When the record already there says the same (every field but the time, and the same versions
    but for the platform string), the file is left untouched."""
    stamped = {**record, "record_sha256": record_hash(record)}
    EvidenceRecord.from_json(stamped)  # checked on the way out too
    path = record_path(root, record["perturbation"], record["gate"])
    old = _read(path)
    if old is not None and _same_observation(old, record):
        return path
    jsonio.write_json(path, stamped)
    return path


def _read(path: Path) -> dict | None:
    try:
        return dict(EvidenceRecord.from_text(path.read_text(encoding="utf-8")).json)
    except (OSError, ValueError):
        return None


def _same_observation(old: dict, new: dict) -> bool:
    def body(r):
        out = {k: v for k, v in r.items() if k not in _CIRCUMSTANCES}
        out["versions"] = {k: v for k, v in (r.get("versions") or {}).items() if k != "platform"}
        return out
    return jsonio.dumps(body(old)) == jsonio.dumps(body(new))


def load_all(root: str | os.PathLike, perturbations: Iterable[str] | None = None) -> list[EvidenceRecord]:
    """Every valid record under the evidence root `root` (of `perturbations` only, when given: their
    folders alone are read), sorted by (perturbation, gate). What is not a valid record is left out
    here: `scan` says which files and why."""
    return scan(root, perturbations)[0]


def scan(root: str | os.PathLike, perturbations: Iterable[str] | None = None
         ) -> tuple[list[EvidenceRecord], list[tuple[Path, str, str]]]:
    """(the valid records under `root` sorted by (perturbation, gate), [(file, why, what to do) for
    every file that is not one]): unreadable, truncated or not JSON, another schema, a field missing
    or of the wrong type, or a record lying where another perturbation's or gate's would (moved or
    copied). A bad file is never skipped in silence: check names it; `perturb --stale` re-creates a
    record in its own place (its gate has no valid record, so the perturbation runs again), and a
    copy lying elsewhere is to be deleted. `perturbations`: read only their folders (a run of a few
    perturbations need not parse the ~9,000 records of all the others)."""
    root = Path(root)
    records: list[EvidenceRecord] = []
    bad: list[tuple[Path, str, str]] = []
    if not root.is_dir():
        return records, bad
    files = (root.glob("*/*.json") if perturbations is None
             else (f for pid in set(perturbations) for f in record_dir(root, pid).glob("*.json")))
    for f in sorted(files):
        try:
            rec = EvidenceRecord.from_text(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            bad.append((f, f"unreadable: {exc}", RECREATE))
            continue
        except InvalidRecord as exc:
            bad.append((f, exc.why, exc.todo))
            continue
        except ValueError as exc:
            bad.append((f, f"not JSON (truncated?): {exc}", RECREATE))
            continue
        own = record_path(root, rec.perturbation, rec.gate)
        if f != own:
            bad.append((f, f"it records {rec.perturbation} x {rec.gate}, whose record lies at "
                           f"{own.relative_to(root).as_posix()} (moved or copied)", "delete this copy"))
            continue
        records.append(rec)
    records.sort(key=lambda r: (r.perturbation, r.gate))
    return records, bad
