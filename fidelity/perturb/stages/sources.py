"""Step 7, nothing on disk moved: the targets' sources, the gate files and their helpers, and every file
under fixtures/ hashed before the baseline and again after green after; any change stops the run."""
from __future__ import annotations

from pathlib import Path

from fidelity.evidence import jsonio, paths
from fidelity.evidence.gate_helpers import GateHelpers
from fidelity.perturb.stages.state import Run
from fidelity.source_meaning import meaning_sha256_of, memo_of
from fidelity.targets import locate


def hash_watched_files(r: Run) -> None:
    """Sets r.watch.files, r.watch.hashes_before (step 7 compares them after green after) and
    r.watch.keys_before (what the same bytes mean: the keys evidence records carry)."""
    r.watch.helpers = GateHelpers(r.s.root, locate.child_search_path(str(r.s.root)))
    r.watch.files = _watched_files(r.patches, r.selection.todo, r.selection.index, r.clean.selected, r.s.root,
                                   r.s.fixtures, r.watch.helpers)
    memo = memo_of(r.s.root)
    for f in r.watch.files:
        try:
            data = Path(f).read_bytes()
        except OSError:
            r.watch.hashes_before[f] = r.watch.keys_before[f] = None
            continue
        r.watch.hashes_before[f] = jsonio.sha256_bytes(data)
        r.watch.keys_before[f] = meaning_sha256_of(data, Path(f).suffix, memo)
    for p in r.selection.todo:  # the text each patch was computed on is the "before" of its target
        patch = r.patches[p["id"]]
        r.watch.hashes_before[patch.path], r.watch.keys_before[patch.path] = patch.original_sha256, patch.original_key


def _watched_files(patches, todo, index, selected, root: Path, fixtures: Path, helpers: GateHelpers) -> list[str]:
    files = {patches[p["id"]].path for p in todo}
    gate_files = {index.file_of(g) for g in selected}
    files |= {str(root / f) for f in gate_files}
    files |= {str(path) for f in gate_files for path in helpers.of(f).values()}
    if fixtures.is_dir():
        files |= {str(f) for f in fixtures.rglob("*") if f.is_file()}
    return sorted(files)


def unchanged(r: Run) -> bool:
    """Sets r.result.sources; False (the run stops, no evidence) when a watched file, or a fixture
    read but not hashed before, differs from what it was before the baseline."""
    root = r.s.root
    hashes_after = {f: jsonio.sha256_file(f) for f in r.watch.files}
    for p in r.selection.todo:  # every file under fixtures/ was hashed before: one read but not hashed appeared during the run
        for o in r.results[p["id"]].outcomes:
            for fx in o.fixtures_read:
                full = str(paths.resolve(fx, root))
                if full not in r.watch.hashes_before:
                    r.watch.hashes_before[full], hashes_after[full] = None, jsonio.sha256_file(full)
    before = r.watch.hashes_before
    changed = sorted(paths.rel_to_root(f, root) for f in before if before[f] != hashes_after.get(f))
    r.result.sources = {"watched": len(r.watch.hashes_before), "changed": changed}
    if changed:
        written = f" (the records of {len(r.written)} perturbations were written before)" if r.written else ""
        r.stop("source_changed", "files changed on disk during the run (a gate, a target or a fixture); "
                             f"no evidence written{written}: {changed}")
        return False
    return True
