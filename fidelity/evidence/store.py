"""Writing and reading records: one file per perturbation, atomic, deterministic, never churning,
never skipping a bad record.

A perturbation's records lie together in its file, `<evidence root>/<id>.json` (evidence_file.py: by
gate, sorted). A file is written atomically (a temporary file in the same directory, then os.replace)
and deterministically (sorted keys, indent 1, strict JSON: a non-finite reading is "NaN" / "Infinity" /
"-Infinity"). A record whose outcome is unchanged stays as it was: only the clock and the platform
string would differ, and they say nothing new; a file whose records are all unchanged is not touched.
An evidence root still in the old layout (a file per gate) is refused, never read in part
(old_layout.py says what to run).
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from fidelity.evidence import evidence_file, jsonio, old_layout, read_memo
from fidelity.evidence.paths import CLEAN_RUNS_FILE, old_layout_dir, old_layout_path, record_file
from fidelity.evidence.record import RECREATE, EvidenceRecord, InvalidRecord, record_hash

# what may differ between two runs that saw the same thing with the same versions of python, torch,
# pytest and fidelity: the clock and the machine's kernel string (a rewrite for them would only churn)
_CIRCUMSTANCES = ("recorded_at", "record_sha256")


def write_record(root: str | os.PathLike, record: dict) -> Path:
    """Write one record into its perturbation's file under the evidence root `root`, the file's other
    records kept as they are; return the file's path."""
    return write_records(root, record["perturbation"], [record], keep=None)


def write_records(root: str | os.PathLike, perturbation: str, records: list[dict],
                  keep: Iterable[str] | None = None) -> Path:
    """Write `records` (of `perturbation`, each stamped with its own hash) into its file; of the records
    already there, those of the gates in `keep` stay as they are and the others go (keep=None: all of
    them stay). A record that says what the one there says (every field but the time, and the same
    versions but for the platform string) stays as it was. A file left with no record is deleted."""
    path = record_file(root, perturbation)
    if any(old_layout_dir(root, perturbation).glob("*.json")):  # never two places for one record
        old_layout.refuse(root)
    old = _read_valid(path, perturbation)
    kept = old if keep is None else {g: r for g, r in old.items() if g in set(keep)}
    for record in records:
        stamped = {**record, "record_sha256": record_hash(record)}
        EvidenceRecord.from_json(stamped)  # checked on the way out too
        if record["perturbation"] != perturbation:
            raise ValueError(f"a record of {record['perturbation']} written as one of {perturbation}")
        before = old.get(record["gate"])
        kept[record["gate"]] = before if before is not None and _same_observation(before, record) else stamped
    _write_file(path, perturbation, kept)
    return path


def convert_old_layout(root: str | os.PathLike) -> tuple[int, int, list[tuple[Path, str, str]]]:
    """Move every valid old-layout record under `root` (old_layout.py) into its perturbation's file as it
    is, hash and all, then delete the files converted and the folders left empty. Returns (records
    converted, files written, [(file, why, what to do)] for each file left in place: not a valid
    record, or one lying where another's would)."""
    root = Path(root)
    found, bad = old_layout.read(root)
    for pid, records in sorted(found.items()):
        path = record_file(root, pid)
        _write_file(path, pid, {**_read_valid(path, pid), **records})
    for pid, records in found.items():
        for gate in records:
            old_layout_path(root, pid, gate).unlink()
    for folder in root.iterdir():
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return sum(len(r) for r in found.values()), len(found), bad


def _write_file(path: Path, perturbation: str, records: dict[str, dict]) -> None:
    if not records:
        path.unlink(missing_ok=True)
        return
    content = evidence_file.text(perturbation, records)
    try:
        if path.read_text(encoding="utf-8") == content:
            return  # the same records: the file is not touched
    except (OSError, UnicodeDecodeError):
        pass
    jsonio.write_atomic(path, content)


def _read_valid(path: Path, perturbation: str) -> dict[str, dict]:
    """gate -> record as written, of the valid records of `perturbation` in the file at `path` ({} when
    there is none: what is not valid there is re-created by the run writing it)."""
    try:
        named, records, _ = _read_file(path)
    except (OSError, ValueError):
        return {}
    return {r.gate: dict(r.json) for r in records} if named == perturbation else {}


def _same_observation(old: dict, new: dict) -> bool:
    def body(r):
        out = {k: v for k, v in r.items() if k not in _CIRCUMSTANCES}
        out["versions"] = {k: v for k, v in (r.get("versions") or {}).items() if k != "platform"}
        return out
    return jsonio.dumps(body(old)) == jsonio.dumps(body(new))


def load_all(root: str | os.PathLike, perturbations: Iterable[str] | None = None, memo: Path | None = None
             ) -> list[EvidenceRecord]:
    """Every valid record under the evidence root `root` (of `perturbations` only, when given: their
    files alone are read), sorted by (perturbation, gate). What is not a valid record is left out
    here: `scan` says which and why. OldLayout when `root` is still in the old layout. `memo`: as scan's."""
    return scan(root, perturbations, memo)[0]


def scan(root: str | os.PathLike, perturbations: Iterable[str] | None = None, memo: Path | None = None,
         light: bool = False) -> tuple[list[EvidenceRecord], list[tuple[Path, str, str]]]:
    """(the valid records under `root` sorted by (perturbation, gate), [(file, why, what to do) for
    every file or record that is not one]): unreadable, truncated or not JSON, another schema, a field
    missing or of the wrong type, or a record lying where another perturbation's or gate's would (moved
    or copied). A bad one is never skipped in silence: check names it; `perturb --stale` re-creates a
    record in its own place (its gate has no valid record, so the perturbation runs again), and a
    copy lying elsewhere is to be deleted. `perturbations`: read only their files (a run of a few
    perturbations need not parse the ~13,000 records of all the others). `memo`: a folder of files read
    before, by their bytes (read_memo.py). `light`: a record read from the memo leaves out
    read_memo.LEFT_OUT_OF_LIGHT (None in its fields: for a caller that judges, never one that renders or
    writes records). OldLayout (old_layout.py) when `root` holds the old layout's folders: its records are
    neither read in part nor skipped."""
    root = Path(root)
    records: list[EvidenceRecord] = []
    bad: list[tuple[Path, str, str]] = []
    if not root.is_dir():
        return records, bad
    old_layout.refuse(root)
    files = ([f for f in root.glob("*.json") if f.name != CLEAN_RUNS_FILE] if perturbations is None
             else [f for f in {record_file(root, pid) for pid in perturbations} if f.is_file()])
    seen: set[str] = set()  # the memo's keys of the files read
    for f in sorted(files):
        try:
            perturbation, mine, wrong = _read_file(f, memo, seen, light)
        except (OSError, UnicodeDecodeError) as exc:
            bad.append((f, f"unreadable: {exc}", RECREATE))
            continue
        except evidence_file.InvalidFile as exc:
            bad.append((f, str(exc), RECREATE))
            continue
        except ValueError as exc:
            bad.append((f, f"not JSON (truncated?): {exc}", RECREATE))
            continue
        own = record_file(root, perturbation)
        if f != own:
            bad.append((f, f"it holds records of {perturbation}, whose file is {own.relative_to(root).as_posix()} "
                           f"(moved or copied)", "delete this copy"))
            continue
        records += mine
        bad += wrong
    records.sort(key=lambda r: (r.perturbation, r.gate))
    if memo is not None and perturbations is None:
        read_memo.prune(memo, seen)  # every file was read: what no file holds now goes
    return records, bad


def _read_file(f: Path, memo: Path | None = None, seen: set[str] | None = None, light: bool = False
               ) -> tuple[str, list[EvidenceRecord], list[tuple[Path, str, str]]]:
    """(the perturbation the evidence file `f` names, its valid records, [(f, why, what to do)] for each
    record that is not one or is not of that perturbation and gate); the memo's key of its bytes is added
    to `seen`."""
    data = f.read_bytes()
    data_key = read_memo.key(data) if memo is not None else ""
    if seen is not None:
        seen.add(data_key)
    kept = read_memo.recall(memo, data_key, light) if memo is not None else None
    if kept is not None:  # these bytes were read before, every record valid and its hash proven
        try:
            return kept[0], [EvidenceRecord.from_json(obj, proven=True, light=light) for _, obj in kept[1]], []
        except (InvalidRecord, TypeError, ValueError):
            pass  # not what was kept (edited by hand): the file is read
    perturbation, entries = evidence_file.parse(data.decode("utf-8"))
    records, bad = [], []
    for gate, obj, as_written in entries:
        try:
            rec = EvidenceRecord.from_json(obj, as_written=as_written)
        except InvalidRecord as exc:
            bad.append((f, f"its record of {gate}: {exc.why}", exc.todo))
            continue
        if (rec.perturbation, rec.gate) != (perturbation, gate):
            bad.append((f, f"it holds a record of {rec.perturbation} x {rec.gate} as one of {perturbation} x {gate} "
                           f"(edited by hand?)", RECREATE))
            continue
        records.append(rec)
    if memo is not None and not bad:
        read_memo.keep(memo, data_key, perturbation, [(gate, obj) for gate, obj, _ in entries])
    return perturbation, records, bad

