"""Evidence files as they were read before, kept by the sha256 of their bytes, so that reading them again
costs a hash and a load instead of a parse and a check of every record's hash (check read 90 MB of JSON
in 2.8 s of a 2-core machine, each time, for the same bytes).

Only a file whose every record was valid is kept, and with it what it held as parsed JSON, after each
record's record_sha256 was proven against the file's own bytes: the same bytes hold the same records with
the same hashes. A file read again with other bytes (one changed record, a hand edit, a truncation) is
a miss, parsed and checked in full; a read of the whole folder drops what no file holds now, so the
memo stays the size of the evidence. The memo is `marshal` data (plain values, never code) in the project's
cache, by Python version: a memo that cannot be read is a miss, and deleting it costs one full read.

A file is kept whole, and, once check first reads it, in check's light view too (made from the whole one:
without LEFT_OUT_OF_LIGHT, the per-instance outcomes and the diff, two-thirds of a record that check never
reads): judging this repository's 13,000 records held ~180 MB and loaded 62 MB of memo whole, 23 MB light.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import sys
from pathlib import Path

FORMAT = 1  # bump when what is kept changes
LEFT_OUT_OF_LIGHT = ("instances", "diff")  # what a light read leaves out of each record


def folder(cache_dir: str | os.PathLike) -> Path:
    """The memo's folder in the cache directory `cache_dir` (fidelity/cache.py)."""
    return Path(cache_dir) / "evidence-read" / f"{FORMAT}-python{sys.version_info[0]}.{sys.version_info[1]}"


def key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def recall(memo: Path, data_key: str, light: bool = False) -> tuple[str, list[tuple[str, dict]]] | None:
    """(the perturbation, [(gate key, record as parsed)]) kept for the bytes whose sha256 is `data_key`, each
    record without LEFT_OUT_OF_LIGHT where `light`; None when none is kept or it cannot be read."""
    try:
        kept = marshal.loads(_path(memo, data_key, light).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        whole = recall(memo, data_key) if light else None  # not read light yet: made from the whole view
        if whole is None:
            return None
        kept = whole[0], [(gate, {k: v for k, v in obj.items() if k not in LEFT_OUT_OF_LIGHT})
                          for gate, obj in whole[1]]
        keep(memo, data_key, *kept, light=True)
    if not (isinstance(kept, tuple) and len(kept) == 2 and isinstance(kept[0], str) and isinstance(kept[1], list)):
        return None
    return kept


def keep(memo: Path, data_key: str, perturbation: str, entries: list[tuple[str, dict]], light: bool = False) -> None:
    """Keep a file's parse whose every record was valid, or with `light` its light view (written whole or not
    at all; a failure only means the next read parses again)."""
    try:
        memo.mkdir(parents=True, exist_ok=True)
        tmp = memo / f".{data_key}.{os.getpid()}.tmp"
        tmp.write_bytes(marshal.dumps((perturbation, entries)))
        os.replace(tmp, _path(memo, data_key, light))
    except (OSError, ValueError):
        pass


def _path(memo: Path, data_key: str, light: bool) -> Path:
    return memo / f"{data_key}{'.light' if light else ''}.marshal"


def prune(memo: Path, current: set[str]) -> None:
    """Drop what is kept for bytes no evidence file holds now (`current`: their keys)."""
    try:
        stale = [p for p in memo.glob("*.marshal") if p.name.split(".", 1)[0] not in current]
    except OSError:
        return
    for p in stale:
        try:
            p.unlink()
        except OSError:
            pass
