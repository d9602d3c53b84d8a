"""The code a gate's outcome rests on beyond its own file: what an evidence record hashes besides
the gate file, the target and the fixtures the gate read.

  - the conftest.py files from the project root down to the gate's folder (pytest runs them first);
  - the modules the gate file imports from beside it, or from a conftest's folder (pytest puts both
    on the import path): the gate suite's helpers (a module point, a shared gate body), and the
    local modules those import in turn;
  - the modules of fidelity's gate library (`fidelity.gates`: the comparisons, bounds and readings
    a gate asserts with) that it imports, directly or through a helper, and the library modules
    those import. They are named by module name and located as a child imports them, so a record
    names the same helper in a checkout and in an installed fidelity.

Found from the import statements, without importing anything. Other imports (torch, the rest of
fidelity, the implementation) are not the gate's: the target's source and the versions cover what
a record can pin of them.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from fidelity.evidence.paths import rel_to_root
from fidelity.targets import locate
from fidelity.targets.errors import TargetNotFound

LIBRARY = "fidelity.gates"


class GateHelpers:
    """`of(gate_file)` for the gate files of the project at `root`, each source file read once.
    Make one per judgement or run, not for longer: a file edited after it was read is not seen.
    `search`: the import path a child of the project has (locate.child_search_path)."""

    def __init__(self, root: str | Path, search: list[str]):
        self.root, self.search = Path(root).resolve(), search
        self._names: dict[Path, list[str]] = {}
        self._of: dict[Path, dict[str, Path]] = {}
        self._resolved: dict[tuple, tuple[str, Path, str | None] | None] = {}

    def of(self, gate_file: str | Path) -> dict[str, Path]:
        """name -> file for one gate file (module doc): a conftest or a local helper by its path relative
        to the root, a library module by its dotted name."""
        gate_file = (self.root / gate_file).resolve()
        if gate_file not in self._of:
            self._of[gate_file] = self._closure(gate_file)
        return self._of[gate_file]

    def _closure(self, gate_file: Path) -> dict[str, Path]:
        conftests = _conftests_above(gate_file, self.root)
        folders = [gate_file.parent] + [c.parent for c in conftests if c.parent != gate_file.parent]
        found = {rel_to_root(c, self.root): c for c in conftests}
        todo, seen = [(gate_file, None)], {gate_file}  # (file, its package when it is a library module)
        while todo:
            file, package = todo.pop()
            if file not in self._names:
                self._names[file] = _imported_names(file, package)
            for name in self._names[file]:
                if (name, *folders) not in self._resolved:
                    self._resolved[(name, *folders)] = _resolve(name, folders, self.root, self.search)
                helper = self._resolved[(name, *folders)]
                if helper is not None and helper[1] not in seen:
                    key, path, library_package = helper
                    seen.add(path)
                    found[key] = path
                    todo.append((path, library_package))
        return dict(sorted(found.items()))


def _conftests_above(gate_file: Path, root: Path) -> list[Path]:
    folder, found = gate_file.parent, []
    while True:
        if (folder / "conftest.py").is_file():
            found.append(folder / "conftest.py")
        if folder == root or folder.parent == folder:
            return found[::-1]
        folder = folder.parent


# An import statement's text: `import a, b`, `from a import b` or `from a import (b,\n c)`, at any indent.
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)", re.M)


def _imported_names(file: Path, package: str | None) -> list[str]:
    """The dotted names `file`'s import statements may load (for `from a import b`, both `a` and `a.b`:
    b may be a module). `package`: the file's own package, for its relative imports. Only the import
    statements are parsed (a whole module's tree is 10x the time); a line of prose that reads like
    one does not parse, and is no import."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []  # a gate that cannot be read fails its own collection, loudly
    names = []
    for match in _IMPORT.finditer(text):
        try:
            node = ast.parse(match.group(0).strip()).body[0]
        except (SyntaxError, IndexError):
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    continue  # a test module is not a package: pytest does not import it relatively
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names += [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return [n for n in names if n]


def _resolve(name: str, folders: list[Path], root: Path, search: list[str]) -> tuple[str, Path, str | None] | None:
    """(key, file, its package if a library module) when `name` is a local helper or a library module."""
    if name == LIBRARY or name.startswith(LIBRARY + "."):
        try:
            path = Path(locate.find_source(name, search)).resolve()
        except TargetNotFound:
            return None  # `from fidelity.gates.x import a_function`: not a module
        return name, path, (name if path.name == "__init__.py" else name.rpartition(".")[0])
    relative = Path(*name.split("."))
    for folder in folders:
        for candidate in (folder / relative.with_suffix(".py"), folder / relative / "__init__.py"):
            if candidate.is_file():
                return rel_to_root(candidate.resolve(), root), candidate.resolve(), None
    return None
