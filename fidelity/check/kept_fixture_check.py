"""The last clean verification of the fixtures by `fidelity check`, kept under the key of what it read:
what `check --changed` does not recompute.

Verifying the fixtures recomputes every oracle at 40 digits (6 s of a 2-core machine). Its verdict is
fixed by what it reads: the source of every module it had imported when it finished (the fixture
builders and oracles, in the project and in the `fidelity` package; by name, each hashed as a run would
import it now, so a check from another install of `fidelity` hashes that install's files), every file of the fixtures folder,
the spec files (predicted readings are checked against them) and the versions of Python, sympy, mpmath
and NumPy. A plain check verifies and, when nothing drifted, keeps the key of those inputs and the names
of those modules; `check --changed` hashes the same inputs again and, if the key is equal, reads "0
drifts" instead of recomputing. A drifted or failed verification is never kept, so `--changed`
recomputes until one is clean. The record is in the project's cache (fidelity/cache.py): deleting it
only means the next `--changed` recomputes.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from pathlib import Path

from fidelity import cache
from fidelity.evidence import jsonio
from fidelity.perturb.clean_run_inputs import distribution_version
from fidelity.perturb.machine_neutral import installation_folders
from fidelity.source_meaning import meaning_sha256, memo_of
from fidelity.targets import locate
from fidelity.targets.errors import TargetNotFound

FILE_NAME = "check-fixtures.json"
SCHEMA = "fidelity.check-fixtures/1"
VERSIONED = ("sympy", "mpmath", "numpy")


def modules_read(root: Path) -> list[str]:
    """The loaded modules whose source lies in the project or in the `fidelity` package: after a
    verification, every builder and oracle it ran (and more: a superset keeps the key safe). Not a
    package installed in a venv that lies inside the project (a checkout's .venv): installed packages
    enter by version, wherever the venv is, and hashing sympy's 420 modules cost 7 s a cold check."""
    package = Path(__file__).resolve().parents[1]
    installed = [Path(f).resolve() for f in installation_folders()]
    names = set()
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and os.path.isabs(path):  # torch.ops names a relative "_ops.py"
            p = Path(path).resolve()
            if p.is_relative_to(package) or (
                    p.is_relative_to(root) and not any(p.is_relative_to(f) for f in installed)):
                names.add(name)
    return sorted(names)


def key(root: Path, fixtures_dir: Path, spec_files: list[Path], modules: list[str]) -> str:
    """The sha256 of the verification's inputs, each by what it means (source_meaning.py). Modules enter
    by name and the source a run would import now (this project's checkout or an installed `fidelity`, whichever this process imports); files by
    their name in the project: no absolute path of this machine."""
    root = root.resolve()
    h = hashlib.sha256(f"python {platform.python_version()}\n".encode())
    for dist in VERSIONED:
        h.update(f"{dist} {distribution_version(dist)}\n".encode())
    search, memo = [str(root), *sys.path], memo_of(root)
    for name in modules:
        try:
            meaning = meaning_sha256(locate.find_source(name, search), memo)
        except (TargetNotFound, OSError):
            meaning = None
        h.update(f"module {name} {meaning or '<absent>'}\n".encode())
    fixtures = sorted(p for p in Path(fixtures_dir).rglob("*") if p.is_file()) if Path(fixtures_dir).is_dir() else []
    for kind, group in (("fixture", fixtures), ("spec", sorted(spec_files))):
        for f in group:
            p = (Path(f) if Path(f).is_absolute() else root / f).resolve()
            name = p.relative_to(root).as_posix() if p.is_relative_to(root) else p.name
            h.update(f"{kind} {name} {meaning_sha256(p, memo) or '<absent>'}\n".encode())
    return h.hexdigest()


def save(root: Path, fixtures_dir: Path, spec_files: list[Path]) -> None:
    """Keep a clean verification that just ran in this process."""
    modules = modules_read(root.resolve())
    jsonio.write_json(Path(cache.cache_dir(root)) / FILE_NAME,
                      {"schema": SCHEMA, "key": key(root, fixtures_dir, spec_files, modules), "modules": modules})


def unchanged(root: Path, fixtures_dir: Path, spec_files: list[Path]) -> bool:
    """True when the kept clean verification read exactly what is there now."""
    try:
        kept = json.loads((Path(cache.cache_dir(root)) / FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(kept, dict) or kept.get("schema") != SCHEMA or not isinstance(kept.get("modules"), list):
        return False
    return kept.get("key") == key(root, fixtures_dir, spec_files, [str(m) for m in kept["modules"]])
