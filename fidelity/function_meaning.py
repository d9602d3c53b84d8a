"""What each function of a Python file means, apart from the rest of it: the keys of keys by executed function.

A kept result that executed only some functions of a file depends on those functions and on the file's
**skeleton**, not on the bodies of the functions it never ran. `function_keys` splits a file into

- **units**: each function defined directly in the module, or in a class body (a method, at any depth of
  classes), named by its qualified name (`Class.method`; a second definition of a name `name#2`). A unit is
  its body, with everything nested in it (inner functions, lambdas, comprehensions): a call of any of those
  runs inside it. Its key is the meaning (source_meaning's normal form, docstrings out) of that body.
- **the skeleton**: the rest, each unit's body taken out: imports, module and class-level statements, every
  `def` line (name, arguments, defaults, annotations, decorators). It is run at import and by every caller,
  so any change to it counts for every result that read the file.

What stays in the skeleton, body and all (conservative: an edit there re-runs everything that read the file):
- a function with a decorator other than those that only call it as Python (`KNOWN_CALL_THROUGH`): the
  body of `triton.jit` or `torch.compile` is compiled from its source, never executed line by line, and a
  cache (`lru_cache`) serves a result to a caller that never runs the body;
- a function defined under an `if`, `try`, `with` or loop at module or class level (which one is defined
  depends on code the skeleton holds anyway).

A line heard (calls_so_far.py hears a unit's `def` line) is placed in a unit by `unit_at`: the unit whose
lines, decorators included, hold it; None for module or class-body code, which the skeleton keys.
A file that does not parse has no units: it keys whole (None).

Splitting costs a parse (~6 ms a file): a Python file's split is kept beside it in `__pycache__`, as its meaning
key is (source_meaning.py), under the sha256 of the bytes it came from, so the harness files every new project's
gate index records are split once per installation.
"""
from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from fidelity.source_meaning import FORMAT, kept_beside_source, normal_text, parse_quietly, without_docstrings

KNOWN_CALL_THROUGH = frozenset({"staticmethod", "classmethod", "property", "setter", "getter", "deleter",
                                "abstractmethod", "once_differentiable"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class FunctionKeys:
    """One file split into its skeleton and its units (module doc)."""

    skeleton: str
    units: dict[str, str]  # unit name -> the sha256 of its body
    spans: tuple[tuple[int, int, str], ...]  # (first line, last line, unit name), decorators included

    def unit_at(self, first_line: int) -> str | None:
        """The unit a code object starting at `first_line` belongs to; None: module or class-body code."""
        for first, last, name in self.spans:
            if first <= first_line <= last:
                return name
        return None

    def called(self, def_lines) -> dict:
        """What a result whose process called the units at `def_lines` (calls_so_far.py) depends on in this file:
        {"skeleton": key, "units": {unit: body key}} (module doc)."""
        ran = sorted({self.unit_at(line) for line in def_lines} - {None})
        return {"skeleton": self.skeleton, "units": {u: self.units[u] for u in ran}}

    def keeps(self, recorded: dict) -> bool:
        """Whether this file, as it is now, holds what `called` recorded: the same skeleton and the same bodies."""
        return (self.skeleton == recorded.get("skeleton")
                and all(self.units.get(unit) == key for unit, key in recorded.get("units", {}).items()))


def function_keys(path: str | Path) -> FunctionKeys | None:
    """The skeleton and unit keys of the Python file at `path`; None when it is missing or does not parse."""
    try:
        return function_keys_of(Path(path).read_bytes(), Path(path))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def function_keys_of(data: bytes, source: Path | None = None) -> FunctionKeys | None:
    """The split of `data`; `source`: the Python file the bytes are (or were) of, its split kept beside it."""
    if source is None:
        return _split(data)
    return kept_beside_source(source, "functions", data, lambda: _split(data), _dumps, _loads)


def _dumps(split: FunctionKeys) -> str:
    return json.dumps({"skeleton": split.skeleton, "units": split.units, "spans": split.spans})


def _loads(text: str) -> FunctionKeys:
    kept = json.loads(text)
    return FunctionKeys(kept["skeleton"], kept["units"], tuple(tuple(span) for span in kept["spans"]))


def _split(data: bytes) -> FunctionKeys | None:
    try:
        tree = without_docstrings(parse_quietly(data))
    except (SyntaxError, ValueError):
        return None
    units, spans, seen = {}, [], {}
    for node, qualname in unit_nodes(tree):
        seen[qualname] = seen.get(qualname, 0) + 1
        name = qualname if seen[qualname] == 1 else f"{qualname}#{seen[qualname]}"
        units[name] = _sha(f"unit\n{normal_text(node.body)}")
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        spans.append((first, node.end_lineno, name))
        node.body = []  # the skeleton keeps the def line; normal_text leaves an empty field out
    return FunctionKeys(skeleton=_sha(f"skeleton\n{normal_text(tree)}"), units=units, spans=tuple(spans))


def unit_nodes(tree: ast.Module):
    """(function node, qualified name) of every unit, in file order (module doc)."""
    todo = [(tree.body, "")]
    while todo:
        body, prefix = todo.pop(0)
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                todo.append((stmt.body, f"{prefix}{stmt.name}."))
            elif isinstance(stmt, _FUNCTIONS) and all(_calls_through(d) for d in stmt.decorator_list):
                yield stmt, f"{prefix}{stmt.name}"


def _calls_through(decorator: ast.expr) -> bool:
    """Whether a decorator is one that only calls the function as Python (KNOWN_CALL_THROUGH): a bare name
    or attribute (`staticmethod`, `value.setter`), never a call (`lru_cache(maxsize=None)`)."""
    if isinstance(decorator, ast.Name):
        return decorator.id in KNOWN_CALL_THROUGH
    if isinstance(decorator, ast.Attribute):
        return decorator.attr in KNOWN_CALL_THROUGH
    return False


def _sha(text: str) -> str:
    return hashlib.sha256(f"{FORMAT}\n{text}".encode("utf-8")).hexdigest()
