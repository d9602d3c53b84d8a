"""What a collection of the gate suite read of the harness, by function: when the gate index is collected again.

The gate index (gate_index.py) depends on the test files and configuration (its key) and on the harness:
the fidelity package and the subjects' modules, which say which instances exist and what each targets.
Keyed by the harness whole, any edit of the implementation (its modules are the subjects') collected the
whole suite again in a cold child (3.5 s on 2 cores, before `check --changed` could start its run). A
collection runs little of the harness: its module-level code and the few functions that declare subjects
and mechanisms. So the collecting child hears its calls (calls_so_far.py), and the index is kept with,
for each harness file,

  - imported with its markers: the meaning of the file, its skeleton and the units its collection called
    (function_meaning.py); an edit of a function it never called keeps the index;
  - imported before the child listened (its plugin's own modules), installed, or any file when nothing
    heard can be trusted (the collection started a process: calls_so_far.py): the meaning of the whole file;
  - never imported: nothing. Such a file can change a collection only through a file that was
    imported (an import added, a name it reads), and that file's record moves.

The index is read back while every recorded file holds: the same meaning, or, where its units were
heard, the same skeleton and the same bodies of the units it called. Files are named as the key names
them (inside the project by their relative path, so a moved checkout keeps its index). The record is
made of the files' bytes read before the collection started (`read_before`), as the key is: a file
edited while the child collects is seen as changed by the next lookup.
"""
from __future__ import annotations

import os
from pathlib import Path

from fidelity.evidence.paths import rel_to_root
from fidelity.function_meaning import function_keys, function_keys_of
from fidelity.perturb.machine_neutral import installation_prefixes
from fidelity.source_meaning import meaning_sha256, meaning_sha256_of


def read_before(files: list[Path]) -> dict[Path, bytes | None]:
    """The bytes of each of `files` now, before the collection (None: unreadable)."""
    out: dict[Path, bytes | None] = {}
    for f in files:
        try:
            out[f] = f.read_bytes()
        except OSError:
            out[f] = None
    return out


def recorded(before: dict[Path, bytes | None], collect_calls: dict | None, root: Path,
             memo: Path | None) -> dict[str, dict]:
    """{name: what the collection read of it} for the harness files read in `before` (module doc), made of
    those bytes; `collect_calls`: the child's calls_so_far.COLLECT_FIELD, None (or its "heard" None: it
    started a process that may have run any of them) when what it heard cannot be trusted: every file then
    counts whole, as an installed file, never marked nor named as imported, always does."""
    heard = imported = None
    if collect_calls is not None and collect_calls.get("heard") is not None:
        heard = {os.path.realpath(f): lines for f, lines in collect_calls["heard"].items()}
        imported = {os.path.realpath(f) for f in collect_calls.get("imported") or ()}
    installed = installation_prefixes()
    out: dict[str, dict] = {}
    for f, data in before.items():
        real = os.path.realpath(f)
        if heard is not None and real not in imported and not real.startswith(installed):
            continue  # never imported (and no other process it started could have): it read nothing of it
        meaning = None if data is None else meaning_sha256_of(data, f.suffix, memo)
        split = function_keys_of(data, f) if data is not None and heard is not None and real in heard else None
        out[rel_to_root(f, root)] = {"meaning": meaning, **(split.called(heard[real]) if split else {})}
    return out


def holds(record: dict[str, dict], files: list[Path], root: Path, memo: Path | None) -> bool:
    """Whether what a collection read of the harness (`recorded`) is as it was, the harness now being `files`."""
    now = {rel_to_root(f, root): f for f in files}
    for name, was in record.items():
        f = now.get(name)
        if f is None:
            return False
        if meaning_sha256(f, memo) == was.get("meaning"):
            continue
        split = function_keys(f) if "skeleton" in was else None  # else: read whole, and its meaning moved
        if split is None or not split.keeps(was):
            return False
    return True
