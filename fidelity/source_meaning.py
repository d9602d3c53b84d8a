"""What a source file means, as one sha256: the key that pins kept results to code.

Evidence records, kept clean runs, kept gate runs, kept fixture checks and discovery records are
current while the files they were made from hash as recorded. Hashing bytes made a comment a
re-run; this hashes what the file means instead:

- **Python** (`.py`): the syntax tree (`ast`) with every docstring taken out (the first statement of a
  module, class or function body when it is a string) and no positions, written by our own walk: each
  node's type, then each of its fields that is not empty. Comments, blank lines, line breaks,
  indentation width, quoting style, parentheses that change nothing and docstrings key the same.
  Everything the interpreter runs keys apart: every name, literal (1, 1.0 and True are three), operator,
  call, decorator, default, annotation (dataclasses and pydantic read them), import, statement and
  its order, and a string statement that is not a docstring.
  Why the tree, not tokens: tokens cannot tell a docstring from a string statement, and Python 3.12
  splits f-strings into new tokens; a field a newer Python adds empty (3.12's `type_params`) is
  skipped by the walk, so the key holds across versions wherever the grammar does.
  What it cannot see: a program that reads its own `__doc__` or its line numbers (`inspect`, a
  traceback in a message) behaves differently after such an edit and keys the same; verdicts never
  read them, the text of a kept failure message may.
- **YAML** (`.yaml`, `.yml`): the loaded document, its mappings in file order: comments, quoting and
  layout key the same; every value, and the order of every list and mapping, does not.
- **Anything else**, or a file that does not parse: its bytes (any edit is a change: never read
  back by mistake).

A key is a function of the file's bytes alone (no path, no clock), so `meaning_sha256_of` can key
bytes a run read once (the perturb runner's watch) with what `meaning_sha256` gives for the file.
Parsing costs ~100x hashing bytes (~5 ms a file), so a `memo` folder (the project's cache) keeps each
parsed file's key under the sha256 of the bytes it was computed from and this Python's version: the same bytes,
the same key, read back; deleting it only costs time. A Python file's key is also kept beside it, as Python
keeps its bytecode (in `__pycache__`, with the sha256 of the bytes it came from; not under
`sys.dont_write_bytecode` or where the folder cannot be written): every project reads it there, so the ~300
files of the harness that each project's keys cover are parsed once per installation, not once per
project (a new project's first key of its harness took 0.9 s; the tests make hundreds of projects).
"""
from __future__ import annotations

import ast
import hashlib
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Callable, TypeVar

from fidelity.cache import cache_dir

T = TypeVar("T")
FORMAT = "meaning 1"  # part of every key: bump when the normal form changes (every kept result then re-runs)
_YAML = (".yaml", ".yml")
_PARSED = (".py", *_YAML)  # worth the memo: any other file's key costs what a lookup would


def memo_of(root: str | os.PathLike) -> Path:
    """The memo folder of the project at `root`: in its cache (fidelity/cache.py)."""
    return cache_dir(root) / "meaning-keys"


def meaning_sha256(path: str | os.PathLike, memo: Path | None = None) -> str | None:
    """The meaning key of the file at `path` (module doc), or None when it does not exist; `memo`: a
    folder that keeps keys by the bytes they came from (module doc). A Python file's key is read from
    beside it first, and kept there (module doc)."""
    try:
        data = Path(path).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    suffix = Path(path).suffix
    if suffix.lower() != ".py":
        return meaning_sha256_of(data, suffix, memo)
    return kept_beside_source(Path(path), "meaning", data, lambda: meaning_sha256_of(data, suffix, memo), str, _a_key)


def kept_beside(source: Path, kind: str) -> Path:
    """Where a key of the Python file `source` is kept: beside its bytecode (`kind`: "meaning", "functions")."""
    return source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.fidelity-{kind}"


def kept_beside_source(source: Path, kind: str, data: bytes, make: Callable[[], T | None],
                       dump: Callable[[T], str], load: Callable[[str], T]) -> T | None:
    """What `make()` gives for `data`, the bytes of the Python file `source` (or bytes it had): read back
    (`load`, which raises ValueError, KeyError or TypeError on what it cannot read) from beside the file
    (`kept_beside`) when kept there for the same bytes; else made, and kept there (`dump`) unless it is None
    or Python writes no bytecode (module doc)."""
    beside, came_from = kept_beside(source, kind), f"{FORMAT}\n{hashlib.sha256(data).hexdigest()}\n"
    try:
        kept = beside.read_text(encoding="utf-8")
        if kept.startswith(came_from):
            return load(kept[len(came_from):])
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        pass
    value = make()
    if value is not None and not sys.dont_write_bytecode:
        write_atomically(beside, came_from + dump(value))
    return value


def _a_key(text: str) -> str:
    if len(text) != 64:
        raise ValueError("not a sha256")
    return text


def meaning_sha256_of(data: bytes, suffix: str, memo: Path | None = None) -> str:
    """The meaning key of `data`, the bytes of a file whose name ends in `suffix` ('.py', '.yaml', ...)."""
    suffix = suffix.lower()
    entry = None
    if memo is not None and suffix in _PARSED:
        form = f"{FORMAT.replace(' ', '-')}-python{sys.version_info[0]}.{sys.version_info[1]}"
        entry = memo / form / f"{hashlib.sha256(data).hexdigest()}{suffix}"
        try:
            kept = entry.read_text(encoding="ascii")
            if len(kept) == 64:
                return kept
        except (OSError, UnicodeDecodeError):
            pass
    key = hashlib.sha256(f"{FORMAT}\n".encode() + _normal_form(data, suffix)).hexdigest()
    if entry is not None:
        write_atomically(entry, key)
    return key


def write_atomically(entry: Path, key: str) -> None:
    """Write `key` (or what holds it) to `entry` atomically; a cache that cannot be written only costs the
    next run time."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(key)
        os.replace(tmp, entry)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def _normal_form(data: bytes, suffix: str) -> bytes:
    if suffix == ".py":
        try:
            tree = parse_quietly(data)
        except (SyntaxError, ValueError):
            return b"bytes\n" + data
        return b"python\n" + normal_text(without_docstrings(tree)).encode("utf-8")
    if suffix in _YAML:
        loaded = _yaml(data)
        if loaded is not None:
            return b"yaml\n" + loaded.encode("utf-8")
    return b"bytes\n" + data


def parse_quietly(data: bytes) -> ast.Module:
    """The syntax tree of Python source `data` (bytes: its encoding declaration is honoured), without the
    warnings compiling it would give (an invalid escape like '\\d'): keying a file is not compiling it, and
    the warning belongs to whoever runs it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(data)


_BODIES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def without_docstrings(tree: ast.AST) -> ast.AST:
    """`tree` with the docstring of each module, class and function body taken out (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, _BODIES) and node.body and _is_docstring(node.body[0]):
            node.body = node.body[1:]
    return tree


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def normal_text(value) -> str:
    """A node as `Type(field=..., ...)` over its non-empty fields; positions are attributes, not fields."""
    if isinstance(value, ast.AST):
        parts = []
        for name in value._fields:
            field = getattr(value, name, None)
            if field is None or field == []:
                continue
            parts.append(f"{name}={normal_text(field)}")
        return f"{type(value).__name__}({','.join(parts)})"
    if isinstance(value, list):
        return "[" + ",".join(normal_text(v) for v in value) + "]"
    return f"{type(value).__name__}:{value!r}"  # a constant: 1, 1.0 and True key apart


def _yaml(data: bytes) -> str | None:
    """The documents' repr (mappings in file order; 1 and '1' apart), or None when they do not load
    (then their bytes key them)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = list(yaml.load_all(data, Loader=loader))
    except yaml.YAMLError:
        return None
    return repr(documents)
