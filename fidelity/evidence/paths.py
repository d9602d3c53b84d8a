"""Where records lie: `<evidence root>/<perturbation id sanitised>.json`, one file per perturbation
holding every record of it by gate (evidence_file.py), beside the kept clean runs (CLEAN_RUNS_FILE).
Before issue 54 each record had a file of its own, `<evidence root>/<perturbation id>/<gate>.json`
(old_layout.py names and converts that layout).

The project's evidence root is `<reports_dir>/evidence` (evidence_root); a `--file` catalogue's is its
own, `<reports_dir>/catalogues/<file stem>/evidence` (catalogue_evidence_root), so its ids never
overwrite the project's records.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

EVIDENCE_DIR = "evidence"
CATALOGUES_DIR = "catalogues"
CLEAN_RUNS_FILE = "clean-runs.json"  # the kept clean runs (fidelity.perturb.clean_run_store), not a perturbation's


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


def record_file(root: str | os.PathLike, perturbation_id: str) -> Path:
    """The file of one perturbation's records under an evidence root."""
    name = f"{sanitise(perturbation_id)}.json"
    if name == CLEAN_RUNS_FILE:
        raise ValueError(f"perturbation id {perturbation_id!r} would write its evidence over the kept clean runs "
                         f"({CLEAN_RUNS_FILE}): give it another id")
    return Path(root) / name


def record_path(root: str | os.PathLike, perturbation_id: str, gate: str) -> Path:
    """Where the record of `gate` under `perturbation_id` lies: in its perturbation's file, with the
    records of its other gates."""
    return record_file(root, perturbation_id)


def old_layout_dir(root: str | os.PathLike, perturbation_id: str) -> Path:
    """The folder where the old layout kept one perturbation's records, a file per gate."""
    return Path(root) / sanitise(perturbation_id)


def old_layout_path(root: str | os.PathLike, perturbation_id: str, gate: str) -> Path:
    """Where the old layout kept one record."""
    return old_layout_dir(root, perturbation_id) / f"{sanitise(gate)}.json"


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
