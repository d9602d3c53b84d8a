"""Apply a perturbation's edits to a source text, in memory.

Each edit is `{"find": str, "replace": str}` and is applied to the text left by
the edits before it. A `find` must occur exactly once (overlapping occurrences
count): zero or several matches are a `PatchError` naming the perturbation, the
file and the pattern, never a pass (evidence rule 3). A patch that leaves the
source unchanged is an error too: it would perturb nothing.

A patch carries what its original and its patched source mean (source_meaning.py): evidence is
pinned to both, so a comment edit to the target keeps it current, and an edit that makes the
same find/replace land elsewhere (in a comment, say) does not.
"""
from __future__ import annotations

import difflib
import hashlib
import io
import tokenize
from dataclasses import dataclass

from fidelity.source_meaning import meaning_sha256_of
from fidelity.targets.errors import PatchError

__all__ = ["Patch", "PatchError", "apply_edits", "count_occurrences", "make_patch", "perturbed_key", "unified_diff"]


@dataclass(frozen=True)
class Patch:
    """A patched source, ready to be served by the import hook."""

    perturbation_id: str
    module: str          # dotted name of the target module
    path: str            # absolute path of the module's source file on disk
    display_path: str    # the path used in messages and in the diff (relative to the repo where possible)
    original: str
    patched: str
    diff: str
    original_sha256: str  # of the file's bytes when the patch was computed (the run's watch compares bytes)
    original_key: str     # what those bytes mean (source_meaning): evidence's target_source
    patched_key: str      # what the patched source means: evidence's perturbed_source


def count_occurrences(text: str, pattern: str) -> int:
    """Occurrences of `pattern` in `text`, overlapping ones included."""
    count, start = 0, text.find(pattern)
    while start != -1:
        count += 1
        start = text.find(pattern, start + 1)
    return count


def apply_edits(source: str, edits: list[dict], *, perturbation_id: str, file: str) -> str:
    """Return `source` with every edit applied in order; raise PatchError otherwise."""
    if not edits:
        raise PatchError(perturbation_id, file, None, None, "no edits given")
    text = source
    for i, edit in enumerate(edits):
        if not isinstance(edit, dict) or not isinstance(edit.get("find"), str) or not isinstance(edit.get("replace"), str):
            raise PatchError(perturbation_id, file, None, None, f"edit {i} must be a mapping with string 'find' and 'replace'")
        find, replace = edit["find"], edit["replace"]
        if find == "":
            raise PatchError(perturbation_id, file, find, None, f"edit {i}: empty 'find'")
        n = count_occurrences(text, find)
        if n != 1:
            what = "matches nothing" if n == 0 else f"matches {n} places"
            raise PatchError(perturbation_id, file, find, n, f"edit {i}: 'find' {what} (must match exactly once)")
        text = text.replace(find, replace, 1)
    if text == source:
        raise PatchError(perturbation_id, file, None, None, "the edits leave the source unchanged")
    return text


def unified_diff(original: str, patched: str, file: str) -> str:
    """The patch as a unified diff (a/file -> b/file)."""
    lines = difflib.unified_diff(
        original.splitlines(keepends=True),
        patched.splitlines(keepends=True),
        fromfile=f"a/{file}",
        tofile=f"b/{file}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def read_source(path: str) -> tuple[str, str]:
    """(text, sha256 of the bytes) of a Python source file: decoded as Python
    would (encoding cookie, BOM), with its line endings left as they are."""
    raw, text, _ = _read(path)
    return text, hashlib.sha256(raw).hexdigest()


def _read(path: str) -> tuple[bytes, str, str]:
    with open(path, "rb") as f:
        raw = f.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return raw, raw.decode(encoding), encoding


def make_patch(perturbation_id: str, module: str, path: str, edits: list[dict], *, display_path: str | None = None,
               memo=None) -> Patch:
    """Read `path`, apply `edits` and return the Patch (the file is only read); `memo`: source_meaning's."""
    display = display_path or path
    raw, original, encoding = _read(path)
    patched = apply_edits(original, edits, perturbation_id=perturbation_id, file=display)
    return Patch(perturbation_id, module, path, display, original, patched,
                 unified_diff(original, patched, display), hashlib.sha256(raw).hexdigest(),
                 meaning_sha256_of(raw, ".py", memo), _patched_key(patched, encoding, memo))


def perturbed_key(path: str, edits: list[dict], *, perturbation_id: str, memo=None) -> str:
    """What the source at `path` means with `edits` applied now (Patch.patched_key); PatchError when
    they no longer apply."""
    _, original, encoding = _read(path)
    return _patched_key(apply_edits(original, edits, perturbation_id=perturbation_id, file=path), encoding, memo)


def _patched_key(patched: str, encoding: str, memo) -> str:
    """The key of a patched source: its text in the file's own encoding, by meaning."""
    return meaning_sha256_of(patched.encode(encoding), ".py", memo)
