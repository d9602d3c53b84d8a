"""What a project's warm-start zygote imports before it forks: the libraries the project's own code names.

Importing all of warm_start.PRELOAD (torch, sympy, hypothesis...) costs ~3 s of this machine's CPU
a zygote; a project that never imports torch or sympy (a numpy-only package, a toy repo) paid it
for nothing. `preload_for` reads the import lines of the project's Python files and keeps the
PRELOAD entries some file names. A project that imports a third-party module the scan cannot see
into (it may import torch itself) keeps all of PRELOAD, as does one too large to scan quickly.

Only the speed of a child's start depends on this: a child imports whatever the zygote does not
hold, exactly as a cold child does.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

# Imports a child makes whatever the project names: the harness, its test runner and pytest's own parts.
ALWAYS_HELD = ("pytest",)
_KNOWN_LIGHT = frozenset({"fidelity", "pytest", "_pytest", "pluggy"})
_IMPORT = re.compile(r"^[ \t]*(?:import[ \t]+([\w. \t,]+)|from[ \t]+(\w[\w.]*)[ \t]+import\b)", re.MULTILINE)
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})
MAX_FILES = 5000  # past this the scan would cost more than it saves


def preload_for(root: str | os.PathLike, everything: tuple[str, ...]) -> tuple[str, ...]:
    """The entries of `everything` (the full preload, in its order) that `root`'s project needs."""
    scanned = _scan(Path(root))
    if scanned is None:
        return everything
    imported, local = scanned
    unknown = imported - local - _KNOWN_LIGHT - set(sys.stdlib_module_names) - {m.split(".")[0] for m in everything}
    if unknown:
        return everything
    wanted = imported | set(ALWAYS_HELD)
    return tuple(m for m in everything if m.split(".")[0] in wanted)


def with_pytest_plugins(preload: tuple[str, ...]) -> tuple[str, ...]:
    """`preload` and, when it holds pytest, the modules of the pytest plugins other installed packages
    register (pytest11 entry points: xdist's, hypothesis's...): every child's pytest imports them as it
    starts, ~0.16 s a child on this machine. fidelity's own plugins are left out,
    since the zygote imports no fidelity module. Their asserts are not rewritten (pytest warns so, as it
    already did for hypothesis's modules); a plugin that fails to import is the child's to report."""
    if "pytest" not in preload:
        return preload
    from importlib.metadata import entry_points

    plugins = sorted({ep.module for ep in entry_points(group="pytest11") if ep.module.split(".")[0] != "fidelity"})
    return preload + tuple(m for m in plugins if m not in preload)


def _scan(root: Path) -> tuple[set[str], set[str]] | None:
    """(top-level names the project's .py files import, names of its own modules and packages), or
    None when the project is too large to scan."""
    imported: set[str] = set()
    local: set[str] = set()
    seen = 0
    for folder, dirs, files in os.walk(root):
        if "pyvenv.cfg" in files and Path(folder) != root:  # a virtual environment inside the project
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
        local.update(dirs)
        for name in files:
            if not name.endswith(".py"):
                continue
            seen += 1
            if seen > MAX_FILES:
                return None
            local.add(name[:-3])
            try:
                text = Path(folder, name).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            imported.update(_top_level_imports(text))
    return imported, local


def _top_level_imports(text: str) -> set[str]:
    names: set[str] = set()
    for plain, source in _IMPORT.findall(text):
        modules = [source] if source else [part.split()[0] for part in plain.split(",") if part.strip()]
        names.update(m.split(".")[0] for m in modules if m and not m.startswith("."))
    return names
