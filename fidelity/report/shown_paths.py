"""How the ledger shows a path: relative to the repo root when inside it, so the same inputs give the
same bytes on any machine (model, discovery, stryker and outputs all name paths this one way)."""
from __future__ import annotations

from pathlib import Path


def display_path(path, repo_root: Path) -> str:
    """POSIX path relative to the repo root when inside it, else absolute."""
    p = Path(path)
    try:
        return p.resolve().relative_to(Path(repo_root).resolve()).as_posix()
    except (ValueError, OSError):
        return p.as_posix()
