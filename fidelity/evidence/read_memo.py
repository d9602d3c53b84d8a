"""Evidence files as they were read before, kept by the sha256 of their bytes, so that reading them again
costs a hash and a load instead of a parse and a check of every record's hash (check read 90 MB of JSON
in 2.8 s of a 2-core machine, each time, for the same bytes).

Only a file whose every record was valid is kept, and with it what it held as parsed JSON, after each
record's record_sha256 was proven against the file's own bytes: the same bytes hold the same records with
the same hashes. A file read again with other bytes (one changed record, a hand edit, a truncation) is
a miss, parsed and checked in full; a read of the whole folder drops what no file holds now, so the
memo stays the size of the evidence. The memo is `marshal` data (plain values, never code) in the project's
cache, by Python version: a memo that cannot be read is a miss, and deleting it costs one full read.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import sys
from pathlib import Path

FORMAT = 1  # bump when what is kept changes


def folder(cache_dir: str | os.PathLike) -> Path:
    """The memo's folder in the cache directory `cache_dir` (fidelity/cache.py)."""
    return Path(cache_dir) / "evidence-read" / f"{FORMAT}-python{sys.version_info[0]}.{sys.version_info[1]}"


def key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def recall(memo: Path, data_key: str) -> tuple[str, list[tuple[str, dict]]] | None:
    """(the perturbation, [(gate key, record as parsed)]) kept for the bytes whose sha256 is `data_key`;
    None when none is kept or it cannot be read."""
    try:
        kept = marshal.loads((memo / f"{data_key}.marshal").read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not (isinstance(kept, tuple) and len(kept) == 2 and isinstance(kept[0], str) and isinstance(kept[1], list)):
        return None
    return kept


def keep(memo: Path, data_key: str, perturbation: str, entries: list[tuple[str, dict]]) -> None:
    """Keep a file's parse whose every record was valid (written whole or not at all; a failure only
    means the next read parses again)."""
    try:
        memo.mkdir(parents=True, exist_ok=True)
        tmp = memo / f".{data_key}.{os.getpid()}.tmp"
        tmp.write_bytes(marshal.dumps((perturbation, entries)))
        os.replace(tmp, memo / f"{data_key}.marshal")
    except (OSError, ValueError):
        pass


def prune(memo: Path, current: set[str]) -> None:
    """Drop what is kept for bytes no evidence file holds now (`current`: their keys)."""
    try:
        stale = [p for p in memo.glob("*.marshal") if p.stem not in current]
    except OSError:
        return
    for p in stale:
        try:
            p.unlink()
        except OSError:
            pass
