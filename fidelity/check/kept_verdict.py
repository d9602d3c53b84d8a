"""A check stage's clean verdict kept under the key of everything it read, so that `check --changed`
reads it back instead of running the stage again (kept_fixture_check.py, kept_code_check.py).

What a stage read: the modules it had imported when it finished, in the project or in the `fidelity`
package (each by name and by the meaning of the source a run would import now: source_meaning.py, so
a check from another install of `fidelity` hashes that install's files), the files it read (by their
name in the project and their meaning), and what the stage names beside them (versions, settings).
Only a clean verdict is kept: one with a problem runs again until it is clean. The record is in the
project's cache (fidelity/cache.py): deleting it only means the next `--changed` runs the stage.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from pathlib import Path

from fidelity import cache
from fidelity.evidence import jsonio
from fidelity.perturb.machine_neutral import installation_prefixes
from fidelity.source_meaning import meaning_sha256, memo_of
from fidelity.targets import locate
from fidelity.targets.errors import TargetNotFound


def modules_read(root: Path) -> list[str]:
    """The loaded modules whose source lies in the project, in a folder of PYTHONPATH (a subject's package
    beside the project) or in the `fidelity` package: after a stage, every module it ran (and more: a superset
    keeps the key safe). Not a package installed in a venv that lies inside the project (a checkout's
    .venv): installed packages enter by version, wherever the venv is, and hashing sympy's 420 modules
    cost 7 s a cold check."""
    package = Path(__file__).resolve().parents[1]
    installed = installation_prefixes()
    own = [root, *(Path(p).resolve() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    names = set()
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and os.path.isabs(path):  # torch.ops names a relative "_ops.py"
            p = _resolved(path)
            if p.is_relative_to(package) or (any(p.is_relative_to(f) for f in own)
                                             and not str(p).startswith(installed)):
                names.add(name)
    return sorted(names)


@functools.lru_cache(maxsize=None)
def _resolved(path: str) -> Path:
    """`path` resolved, once a process: a check asks for ~1,700 loaded modules' files after each of three
    stages (0.08 s each time)."""
    return Path(path).resolve()


def inputs_key(root: Path, named: list[str], modules: list[str], files: list[tuple[str, Path]]) -> str:
    """The sha256 of `named` (lines the stage names: versions, settings), `modules` by name and the source a
    run would import now, and `files` ((kind, path)) by their name in the project: no absolute path of
    this machine. Each source and file by what it means."""
    root = root.resolve()
    h = hashlib.sha256("".join(f"{line}\n" for line in named).encode())
    search, memo = [str(root), *sys.path], memo_of(root)
    for name in modules:
        try:
            meaning = meaning_sha256(locate.find_source(name, search), memo)
        except (TargetNotFound, OSError):
            meaning = None
        h.update(f"module {name} {meaning or '<absent>'}\n".encode())
    for kind, f in files:
        p = (Path(f) if Path(f).is_absolute() else root / f).resolve()
        name = p.relative_to(root).as_posix() if p.is_relative_to(root) else p.name
        h.update(f"{kind} {name} {meaning_sha256(p, memo) or '<absent>'}\n".encode())
    return h.hexdigest()


class KeptVerdict:
    """The kept clean verdict of one stage of the project at `root`: `key_of(modules)` is the stage's
    inputs_key over those modules and what else it read now."""

    def __init__(self, root: Path, file_name: str, schema: str):
        self.root, self.file, self.schema = Path(root), Path(cache.cache_dir(root)) / file_name, schema

    def save(self, key_of, result=None) -> None:
        """Keep a clean verdict the stage just reached in this process (`result`: what it found, for a stage
        whose report carries more than ok); not a result that strict JSON would not give back as it is (a NaN,
        a tuple): read back, it would not be what the stage found, so the stage runs again."""
        try:
            if json.loads(jsonio.dumps(result)) != result:
                return
        except ValueError:  # strict JSON holds no NaN
            return
        modules = modules_read(self.root.resolve())
        jsonio.write_json(self.file, {"schema": self.schema, "key": key_of(modules), "modules": modules,
                                      "result": result})

    def unchanged(self, key_of) -> bool:
        """True when the kept clean verdict read exactly what is there now."""
        return self.kept(key_of) is not None

    def kept(self, key_of) -> dict | None:
        """The kept record ("result": what the stage found) when it read exactly what is there now, else None."""
        try:
            kept = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(kept, dict) or kept.get("schema") != self.schema or not isinstance(kept.get("modules"), list):
            return None
        return kept if kept.get("key") == key_of([str(m) for m in kept["modules"]]) else None
