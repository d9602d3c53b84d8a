"""What one gate instance's clean run read, as one key: equal keys, the same run.

A clean run (clean_runs.py) is worth keeping only while everything that could change its outcome or
its readings is unchanged. Each file counts by what it means (source_meaning.py: a comment, a
docstring or a reformatting changes nothing; a fixture counts by its bytes). An instance's key is a
sha256 over
  - its node id and its gate file;
  - the gate suite's shared files: every non-test `.py` under the test paths (helpers, conftests),
    the conftests above them and the project's pytest configuration;
  - every file under the fixtures folder (a gate may read a fixture another instance loaded first,
    so the files one instance opened are not all it depends on);
  - every file under the project's specs folder (a gate may read a default from them: spec_value);
  - the sources of the modules it targets (located by name on the path a child imports them from);
  - the harness: the `fidelity` package's sources (the gates' helpers, the plugin) but for the
    targets, the modules the project configures as subjects and mechanisms, and those of subjects the
    run adds by reference (harness_sources.py);
  - the versions of Python, torch, NumPy, pytest and Triton, the machine's architecture, and which
    subjects the gates are parametrised over.
A target's source is in only its own instances' keys, so an edit to one implementation keeps the
other instances' runs: the targets must name every module an instance runs (the subject's
`modules` do; a package `__init__` that imports its siblings runs their import-time code only,
and that stays with `fidelity check`, which runs every instance).
An instance without a target (nothing says which code it runs) or whose target cannot be found has
no key: its clean runs are never kept. `key` is deterministic: no clock, no absolute path.
"""
from __future__ import annotations

import hashlib
import os
import platform
from importlib import metadata
from pathlib import Path

from fidelity.perturb import gate_index, harness_sources
from fidelity.source_meaning import meaning_sha256, memo_of
from fidelity.targets import locate
from fidelity.targets.errors import TargetNotFound

FORMAT = 3  # bump when what a key covers changes: every kept clean run is then run again (2: the specs; 3: by meaning)
VERSIONED = ("torch", "numpy", "pytest", "triton")


class InputsNow:
    """The project's inputs as they are now, each hashed once; `key(item)` for an index item
    (gate_index.GateIndex.items). Make one per run: a file edited after it was made is not seen."""

    def __init__(self, root: str | os.PathLike, test_paths: list[str], fixtures_dir: str | os.PathLike,
                 index: gate_index.GateIndex, env: dict | None = None):
        self.root = Path(root).resolve()
        self._search = locate.child_search_path(str(self.root))
        self._memo = memo_of(self.root)
        self._sha: dict[str, str | None] = {}
        self._target_sha: dict[str, str | None] = {}
        self._source_of: dict[str, str | None] = {}  # a search per module: check asked ~9,000 times (1.1 s)
        targets = sorted({t for it in index.items for t in it.get("targets", [])})
        target_files = {f for f in (self._source(t) for t in targets) if f}
        shared = hashlib.sha256(f"format {FORMAT}\n".encode())
        for line in _versions():
            shared.update(line.encode() + b"\n")
        shared.update(gate_index.subject_setting(env).encode())
        for f in gate_index.hashed_files(list(test_paths), self.root):
            if not f.name.startswith("test_"):
                shared.update(self._named_sha(f))
        for folder in (Path(fixtures_dir), _specs_dir(self.root)):
            if folder.is_dir():
                for f in sorted(p for p in folder.rglob("*") if p.is_file()):
                    shared.update(self._named_sha(f))
        for f in harness_sources.files(gate_index.harness_modules(self.root, env), self._search):
            if str(f) not in target_files:
                shared.update(self._named_sha(f))
        self._shared = shared.hexdigest()

    def key(self, item: dict) -> str | None:
        """The key of one index item's clean run; None when it cannot be keyed (see module doc)."""
        apart = self.key_apart_from_targets(item)
        if apart is None:
            return None
        h = hashlib.sha256(apart.encode() + b"\n")
        for t in sorted(item["targets"]):
            h.update(f"{t} {self._target(t)}\n".encode())
        return h.hexdigest()

    def key_apart_from_targets(self, item: dict) -> str | None:
        """The key of everything `key` covers but the targets' sources (their names are in it): a caller that
        keys the sources by the functions a run executed (keys by function) adds them itself. None when the
        item cannot be keyed."""
        targets = sorted(item.get("targets") or ())
        if not targets or any(self._target(t) is None for t in targets):
            return None
        h = hashlib.sha256(self._shared.encode() + b"\n")
        h.update(f"{item['nodeid']}\n".encode())
        h.update(self._named_sha(self.root / item["file"]))
        for t in targets:
            h.update(f"target {t}\n".encode())
        return h.hexdigest()

    def target_source(self, module: str) -> str | None:
        """The file a target module is imported from by a child of the project (None: not found)."""
        return self._source(module)

    def target_meaning(self, module: str) -> str | None:
        """The meaning key of a target module's source (None: not found)."""
        return self._target(module)

    def _named_sha(self, path: Path) -> bytes:
        """The file's name as the project sees it (no machine's path) and its sha256."""
        full = str(path)
        if full not in self._sha:
            self._sha[full] = meaning_sha256(full, self._memo)
        name = os.path.relpath(full, self.root) if _inside(full, self.root) else _installed_name(full, self._search)
        return f"{name} {self._sha[full] or 'missing'}\n".encode()

    def _source(self, module: str) -> str | None:
        if module not in self._source_of:
            try:
                self._source_of[module] = locate.find_source(module, self._search)
            except TargetNotFound:
                self._source_of[module] = None
        return self._source_of[module]

    def _target(self, module: str) -> str | None:
        if module not in self._target_sha:
            source = self._source(module)
            self._target_sha[module] = meaning_sha256(source, self._memo) if source else None
        return self._target_sha[module]


def _specs_dir(root: Path) -> Path:
    """The specs folder of the project at `root` (its configuration's, else the default `specs`)."""
    from fidelity import project

    try:
        return project.load(root).specs
    except project.ProjectError:
        return root / "specs"


def distribution_version(dist: str) -> str:
    """The installed version of `dist`, or "absent" (a key then still says it was not there)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def _versions() -> list[str]:
    return [f"python {platform.python_version()}", f"machine {platform.machine()}",
            *(f"{d} {distribution_version(d)}" for d in VERSIONED)]


def _inside(path: str, root: Path) -> bool:
    return Path(path).is_relative_to(root)


def _installed_name(path: str, search: list[str]) -> str:
    """An installed file by its place under the deepest search-path folder holding it."""
    holders = [s for s in search if path.startswith(s.rstrip(os.sep) + os.sep)]
    return os.path.relpath(path, max(holders, key=len)) if holders else os.path.basename(path)
