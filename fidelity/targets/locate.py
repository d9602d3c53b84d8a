"""Find a module's source file by name without importing it.

The runner must know which file a perturbation patches (to patch it, hash it
and show its diff) but must not execute the module, or any package above it,
in its own process. Path-based finders resolve a dotted name one level at a
time, exactly as the import system would on the same search path.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys

from fidelity.targets.errors import TargetNotFound


def child_search_path(repo_root: str, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The module search path a child process will have, in order: the repo root
    (its working directory, first for `python -m`), the extra paths, the
    directory holding the `fidelity` package, then this interpreter's own path."""
    import fidelity

    fidelity_parent = os.path.dirname(os.path.dirname(os.path.abspath(fidelity.__file__)))
    out: list[str] = []
    for p in [repo_root, *extra, fidelity_parent, *sys.path]:
        if not p:
            continue
        p = os.path.abspath(p)
        if p not in out:
            out.append(p)
    return out


def module_path(module: str, source: str) -> str:
    """The environment-free name of a module's source: its dotted name as a path
    ('ot.bregman._sinkhorn' -> 'ot/bregman/_sinkhorn.py', a package -> '.../__init__.py'),
    the same in any venv, install mode or Python version. Evidence and diffs use it."""
    tail = "__init__.py" if os.path.basename(source) == "__init__.py" else None
    parts = module.split(".")
    return "/".join([*parts, tail] if tail else [*parts[:-1], parts[-1] + ".py"])


def find_source(module: str, search_path: list[str]) -> str:
    """Absolute path of the `.py` file that importing `module` would execute."""
    parts = module.split(".")
    if not module or not all(p.isidentifier() for p in parts):
        raise TargetNotFound(f"target {module!r} is not a dotted module name")
    path: list[str] | None = list(search_path)
    spec = None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        if path is None:
            raise TargetNotFound(f"target {module!r}: {'.'.join(parts[:i])!r} is a module, not a package")
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            raise TargetNotFound(f"target {module!r}: cannot find {name!r} on the search path {search_path}")
        path = list(spec.submodule_search_locations) if spec.submodule_search_locations is not None else None
    assert spec is not None
    origin = spec.origin
    if not origin or not origin.endswith(".py") or not os.path.isfile(origin):
        raise TargetNotFound(f"target {module!r} resolves to {origin!r}, which is not Python source that can be patched")
    return os.path.abspath(origin)
