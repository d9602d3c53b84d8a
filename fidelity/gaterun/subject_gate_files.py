"""The gate files that can hold a subject: those with a gate naming a mechanism it provides.

`check --subject` and the ledger's third-party runs run the gate suite on one subject alone. A gate
file none of whose gates names one of its mechanisms collects only instances of other subjects'
mechanisms, none of which runs; collecting every file (3,000 instances here) cost more than the gates
a small adapter is held by. The mechanism a gate names is read from the file's source,
`pytest.mark.gate(..., mechanism=NAME)`, NAME a string, a module-level constant, or a constant
imported from a helper module beside the file. A file where it cannot be read so is kept: the
selection leaves out only files that cannot hold the subject.

ONLY_ENV (internal, for the project's own tests; fidelity never sets it) narrows the selection further to
the files it names: a test that reads a few gates' results of `check --subject` runs only those. It is
never silent: the run says on stderr which files it narrowed to.
"""
from __future__ import annotations

import ast
import os
import sys
from pathlib import Path
from typing import Iterable

ONLY_ENV = "FIDELITY_ONLY_GATE_FILES"
"""Gate files by their path inside the gates folder (test_x.py), separated by os.pathsep."""

UNREAD = object()
"""A gate's mechanism that the source does not say as a constant."""


def gate_files(gates: Path) -> list[Path]:
    """The test files pytest collects under `gates` (a folder, or one file)."""
    if gates.is_file():
        return [gates]
    return sorted({*gates.rglob("test_*.py"), *gates.rglob("*_test.py")})


def files_for(gates: Path, mechanisms: Iterable[str]) -> list[Path]:
    """The gate files under `gates` that may hold one of `mechanisms` (every file when none can be told apart)."""
    wanted = set(mechanisms)
    files = gate_files(gates)
    only = named_in_env(gates, files)
    if only is not None:
        return only
    kept = [f for f in files if any(m is UNREAD or m in wanted for m in named_mechanisms(f))]
    return kept or files


class UnknownGateFiles(ValueError):
    """ONLY_ENV names a file that is no gate file of the project."""


def named_in_env(gates: Path, files: list[Path]) -> list[Path] | None:
    """The gate files ONLY_ENV names (None when it is not set); a name that is no gate file is an error,
    since a run without it would be read as a run with it."""
    names = [n for n in os.environ.get(ONLY_ENV, "").split(os.pathsep) if n.strip()]
    if not names:
        return None
    folder = gates if gates.is_dir() else gates.parent
    named = [(folder / n.strip()).resolve() for n in names]
    known = {f.resolve(): f for f in files}
    unknown = [str(n) for n in named if n not in known]
    if unknown:
        raise UnknownGateFiles(f"{ONLY_ENV} names {', '.join(unknown)}, which "
                               f"{'is' if len(unknown) == 1 else 'are'} not a gate file under {gates}: "
                               f"name each by its path inside that folder")
    # never silent: a run that holds a subject to fewer gates than the suite has says so where a person reads it
    print(f"fidelity: {ONLY_ENV} narrows the gate files to {', '.join(sorted(n.strip() for n in names))}",
          file=sys.stderr)
    return [f for f in files if f.resolve() in set(named)]


def named_mechanisms(file: Path) -> list:
    """The `mechanism=` of every gate marker in `file`: a name, or UNREAD where the source does not say one."""
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return [UNREAD]
    constants = _string_constants(tree, file.parent)
    named = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_gate_marker(node.func):
            for kw in node.keywords:
                if kw.arg == "mechanism":
                    named.append(_value(kw.value, constants))
                elif kw.arg is None:  # **options: the mechanism may be among them
                    named.append(UNREAD)
    return named


def _is_gate_marker(func: ast.expr) -> bool:
    """pytest.mark.gate(...), or gate(...) where the marker was given a name of its own."""
    return (isinstance(func, ast.Attribute) and func.attr == "gate") or (isinstance(func, ast.Name) and func.id == "gate")


def _value(node: ast.expr, constants: dict[str, str]):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return UNREAD


def _string_constants(tree: ast.Module, folder: Path, follow_imports: bool = True) -> dict[str, str]:
    """Module-level NAME = "text" assignments, and names imported from a module file in `folder` that has one."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
        elif follow_imports and isinstance(node, ast.ImportFrom) and node.module and not node.level:
            helper = folder / f"{node.module.replace('.', '/')}.py"
            if helper.is_file():
                try:
                    theirs = _string_constants(ast.parse(helper.read_text(encoding="utf-8")), folder, False)
                except (OSError, SyntaxError, UnicodeDecodeError):
                    continue
                found.update({(a.asname or a.name): theirs[a.name] for a in node.names if a.name in theirs})
    return found
