"""The old layout, named and converted: a folder per perturbation, a file per gate (before issue 54).

An evidence root that still holds such folders is never read in part nor skipped: every reader and
writer of the store raises OldLayout, whose message names the one command that converts it,
`fidelity perturb --convert-evidence` (store.convert_old_layout: the same records, with the same hashes,
moved into one file per perturbation; the files it converted are deleted, and a file it cannot read is
left in place and named, so the store is refused until somebody decides about it).
"""
from __future__ import annotations

import os
from pathlib import Path

from fidelity.evidence import paths
from fidelity.evidence.record import RECREATE, EvidenceRecord, InvalidRecord

CONVERT = "fidelity perturb --convert-evidence"


class OldLayout(Exception):
    """The evidence root holds records in the old layout; the message says what to run."""

    def __init__(self, root: Path, folders: list[Path]):
        self.root, self.folders = root, folders
        shown = ", ".join(f"{f.name}/" for f in folders[:3]) + (f" and {len(folders) - 3} more" if len(folders) > 3 else "")
        super().__init__(f"{root} holds evidence in the old layout, a file per gate in a folder per perturbation "
                         f"({shown}); convert it once with `{CONVERT}{_evidence_option(root)}` (the same records, "
                         f"one file per perturbation), or delete those folders and re-run their perturbations")


def _evidence_option(root: Path) -> str:
    """What the command needs to find `root`: nothing for a project's reports/evidence, else the folder
    (a catalogue's, or one given with --evidence)."""
    return "" if (root.name, root.parent.name) == (paths.EVIDENCE_DIR, "reports") else f" --evidence {root}"


def folders(root: str | os.PathLike) -> list[Path]:
    """The folders under `root` that hold a .json file: the old layout's (the new one has no folder)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(d for d in root.iterdir() if d.is_dir() and any(d.glob("*.json")))


def refuse(root: str | os.PathLike) -> None:
    """OldLayout when `root` holds old-layout folders."""
    found = folders(root)
    if found:
        raise OldLayout(Path(root), found)


def read(root: str | os.PathLike) -> tuple[dict[str, dict[str, dict]], list[tuple[Path, str, str]]]:
    """(perturbation -> gate -> record as written, for every valid old-layout record under `root`,
    [(file, why, what to do)] for every file that is not one or lies where another record's would)."""
    root = Path(root)
    found: dict[str, dict[str, dict]] = {}
    bad: list[tuple[Path, str, str]] = []
    for f in sorted(f for d in folders(root) for f in d.glob("*.json")):
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
        if f != paths.old_layout_path(root, rec.perturbation, rec.gate):
            bad.append((f, f"it records {rec.perturbation} x {rec.gate} (moved or copied)", "delete this copy"))
            continue
        found.setdefault(rec.perturbation, {})[rec.gate] = dict(rec.json)
    return found, bad
