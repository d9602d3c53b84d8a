"""The sources besides the gate files that decide what a gate run collects and computes.

The fidelity package's own sources (as a child imports them: in this repository's checkout, the checkout,
whichever install runs the parent), the modules the project configures as subjects and mechanisms, and the
modules of subjects a run adds by reference. Which instances a collection holds (a subject's mechanisms, its
capabilities' skips) and what a clean run computed both depend on them, so the gate index's key and every
clean run's key hash them (gate_index.py, clean_run_inputs.py).
"""
from __future__ import annotations

import os
from pathlib import Path

from fidelity.targets import locate
from fidelity.targets.errors import TargetNotFound


def files(modules: tuple[str, ...], search: list[str]) -> list[Path]:
    """The .py files of the fidelity package first on `search`, and the source of each of `modules`
    (one that cannot be found is left out: the subject's own loading reports it)."""
    package = Path(locate.find_source("fidelity", search)).resolve().parent
    found = {p for p in package.rglob("*.py") if "__pycache__" not in p.parts}
    for module in modules:
        try:
            found.add(Path(locate.find_source(module, search)))
        except TargetNotFound:
            continue
    return sorted(found)


def configured_modules(root: str | os.PathLike) -> tuple[str, ...]:
    """The modules the project at `root` names as subjects and mechanisms (none outside a project)."""
    from fidelity import project

    try:
        p = project.load(root)
    except (project.ProjectError, OSError, ValueError):
        return ()
    return tuple(ref.split(":", 1)[0] for ref in (*p.subjects, *p.mechanisms))
