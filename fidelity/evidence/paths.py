"""Where records lie: `<evidence root>/<perturbation id>/<gate id sanitised>.json`.

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
