"""The marked code of a module (calls_so_far.py), kept beside its source as Python keeps a module's
bytecode: compiled once, read back by every later process that imports it.

A gate run hears the calls of every module it imports from source, and each of its processes (a perturbation's
child, a check's gate child) imported them all again: parsing and compiling them from source was a fifth of a
perturbation child's time. The marked code of a file depends only on

  - the file's bytes, its path as imported (the code's file name, which a traceback shows) and its real
    path (each marker names the file and the unit's `def` line),
  - whether pytest rewrites its asserts, and then pytest's version and its `enable_assertion_pass_hook`,
  - this Python's bytecode (importlib's MAGIC_NUMBER), and the marking itself (calls_so_far.py's and
    function_meaning.py's own bytes; this file's format is in its header),

and all of them are hashed into the key the cached file holds: one whose key differs (an edit, a move, a new
pytest) is compiled again and replaced, never read. Written as Python writes its own: into `__pycache__`,
by rename (a process reading at the same time sees the old file or the new one), and not at all under
`sys.dont_write_bytecode` or where the folder cannot be written.
"""
from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
import tempfile
from pathlib import Path

SUFFIX = "fidelity-marked.pyc"
_HEADER = b"fidelity marked code 1\n"


def key(source: bytes, path: str, real_path: str, rewriting: str, marking: bytes) -> bytes:
    """The key of the marked code of `source` imported as `path` (its code's file name: a traceback's) from
    `real_path` (the markers'); `rewriting`: "" where pytest does not rewrite its asserts, else what its
    rewriting depends on; `marking`: the hash of the code that marks (calls_so_far.py)."""
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER + marking)
    for part in (path.encode("utf-8", "surrogateescape"), real_path.encode("utf-8", "surrogateescape"),
                 rewriting.encode("utf-8"), source):
        digest.update(len(part).to_bytes(8, "little") + part)
    return digest.digest()


def cache_file(path: str) -> Path:
    source = Path(path)
    return source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.{SUFFIX}"


def load(path: str, wanted: bytes):
    """The code kept for `path` under the key `wanted`; None when there is none, or it was kept under another."""
    try:
        data = cache_file(path).read_bytes()
    except OSError:
        return None
    start = len(_HEADER) + len(wanted)
    if data[:len(_HEADER)] != _HEADER or data[len(_HEADER):start] != wanted:
        return None
    try:
        return marshal.loads(data[start:])
    except (EOFError, ValueError, TypeError):  # cut short or damaged: compiled again
        return None


def store(path: str, kept_under: bytes, code) -> None:
    """Keep `code` for `path` under the key `kept_under`; nothing when writing bytecode is off or not possible."""
    if sys.dont_write_bytecode:
        return
    target = cache_file(path)
    try:
        target.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(_HEADER + kept_under + marshal.dumps(code))
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a folder that cannot be written: the next process compiles it again
