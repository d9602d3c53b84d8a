"""The specs' `value:`s kept in the project's cache under a hash of everything they were read from.

A gate that reads a default (spec_value) runs in a fresh child: loading and validating the whole
catalogue there cost ~0.3 s a child (YAML, jsonschema and its imports), paid by every clean run and
every perturbation child of a gate that reads one. The values depend only on the files in the specs
directory (the specs and a schema beside them), on the loader that reads them (fidelity/spec's own
files), on PyYAML and on Python; kept under the hash of all of them, they are read back without
loading anything. A changed byte in any of them is another key, so the specs are loaded again; a
catalogue that does not load is never kept (its SpecError is raised on every call). Deleting the cache
only costs time (fidelity/cache.py).
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Callable

from fidelity.cache import cache_dir

FOLDER = "spec-values"
LOADER = Path(__file__).resolve().parent  # fidelity/spec: the loader, its schema and this file


def values(specs_dir: Path, root: Path | None, load: Callable[[], dict[str, object]]) -> dict[str, object]:
    """`load()` (the specs' values by equation id), or what an earlier call with the same inputs kept
    under `root`'s cache; `root` None (no project known): nothing is kept."""
    if root is None:
        return load()
    path = cache_dir(root) / FOLDER / f"{_key(specs_dir)}.json"
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = None
    if isinstance(kept, dict):
        return kept
    loaded = load()
    from fidelity.evidence.jsonio import write_atomic

    try:  # json, not jsonio.dumps: a value may be infinite, and it must read back as it was
        write_atomic(path, json.dumps(loaded, sort_keys=True))
    except OSError:  # a read-only cache only costs the next child the load
        pass
    return loaded


def _key(specs_dir: Path) -> str:
    import yaml

    from fidelity.evidence.jsonio import sha256_file

    h = hashlib.sha256(f"python {sys.version}\npyyaml {yaml.__version__}\n".encode())
    for side, folder in (("specs", specs_dir), ("loader", LOADER)):
        for f in sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml", ".json", ".py")):
            h.update(f"{side} {f.name} {sha256_file(f)}\n".encode())
    return h.hexdigest()
