"""The perturbations as a Stryker mutation-testing report (reports/mutation-report.json).

Schema: mutation-testing-report-schema, schemaVersion "2"
(github.com/stryker-mutator/mutation-testing-elements, packages/report-schema),
so existing viewers (the mutation-testing-elements web component, the Stryker
dashboard) can open it. One mutant per perturbation, in the file of its target
module:

  location     the smallest span of the ORIGINAL source holding every edit
               (1-based line and column, end exclusive); the `find` texts
               themselves when each occurs once in the original
  replacement  that span's text after all the edits
  status       from the perturbation's CURRENT evidence records:
                 Killed        a gate went red by its own assertion (killedBy: those gates)
                 Timeout       no such gate; a child timed out
                 RuntimeError  no such gate; red for another reason (import, shape, crash)
                 Survived      every gate that ran passed
                 NoCoverage    every gate was skipped (nothing checked it)
                 Pending       no current evidence (never run, or only stale records)
                 Ignored       the edits no longer apply to the source (statusReason says why)
  coveredBy    every gate with a current record; testsCompleted their number

No times are written, so the same specs, sources and evidence give the same bytes.
"""
from __future__ import annotations

from pathlib import Path

from fidelity.report.model import RED, RED_OTHER, SKIPPED, SURVIVED, display_path, perturbation_key

SCHEMA_VERSION = "2"
THRESHOLDS = {"high": 80, "low": 60}


def _position(text: str, index: int) -> dict:
    line = text.count("\n", 0, index) + 1
    start_of_line = text.rfind("\n", 0, index) + 1
    return {"line": line, "column": index - start_of_line + 1}


def span(original: str, patched: str, edits: list[dict]) -> tuple[int, int, str]:
    """(start, end, replacement): original[start:end] -> replacement turns original into patched."""
    starts = []
    for e in edits:
        if original.count(e["find"]) != 1:
            starts = None
            break
        i = original.find(e["find"])
        starts.append((i, i + len(e["find"])))
    if starts:
        start, end = min(s for s, _ in starts), max(e for _, e in starts)
    else:  # an edit that matches text an earlier edit wrote: the common prefix and suffix bound the change
        start = 0
        limit = min(len(original), len(patched))
        while start < limit and original[start] == patched[start]:
            start += 1
        tail = 0
        while tail < limit - start and original[-1 - tail] == patched[-1 - tail]:
            tail += 1
        end = len(original) - tail
    replacement = patched[start: len(patched) - (len(original) - end)]
    assert original[:start] + replacement + original[end:] == patched
    return start, end, replacement


def _status(pid: str, entries: list[dict]) -> dict:
    current = [e for e in entries if e["current"]]
    stale = [e for e in entries if not e["current"]]
    covered = sorted(e["gate"] for e in current)
    out = {"coveredBy": covered, "testsCompleted": len(covered)}
    red = [e for e in current if e["outcome"] == RED]
    other = [e for e in current if e["outcome"] == RED_OTHER]
    if red:
        notes = []
        for e in sorted(red, key=lambda e: e["gate"]):
            after = "green after" if e["green_after"] is True else "NOT seen green after"
            notes.append(f"{e['gate']}: reading {e['reading']} ({after}); {e['detail']}")
        return {**out, "status": "Killed", "killedBy": sorted(e["gate"] for e in red), "statusReason": "\n".join(notes)}
    if other:
        timeout = [e for e in other if e["detail"].lower().startswith("timeout") or "timed out" in e["detail"].lower()]
        status = "Timeout" if timeout else "RuntimeError"
        return {**out, "status": status,
                "statusReason": "\n".join(f"{e['gate']}: {e['detail']}"
                                           for e in sorted(other, key=lambda e: e["gate"]))}
    if any(e["outcome"] == SURVIVED for e in current):
        return {**out, "status": "Survived",
                "statusReason": "every gate that ran passed: " + ", ".join(covered)}
    if current and all(e["outcome"] == SKIPPED for e in current):
        return {**out, "status": "NoCoverage", "statusReason": "every gate was skipped: " +
                "; ".join(f"{e['gate']}: {e['detail']}" for e in current)}
    why = f"no current evidence: run `fidelity perturb {pid}`"
    if stale:
        why += "; stale records: " + "; ".join(f"{e['gate']}: {', '.join(e['stale_reasons'])}" for e in stale)
    return {**out, "status": "Pending", "statusReason": why}


def build(ledger: dict, repo_root: Path) -> dict:
    """The report as a dict (see the module docstring)."""
    from fidelity.perturb.errors import PatchError, TargetNotFound
    from fidelity.perturb.locate import child_search_path, find_source
    from fidelity.perturb.patching import apply_edits, read_source

    repo_root = Path(repo_root)
    files: dict[str, dict] = {}
    tests: dict[str, set] = {}
    search = child_search_path(str(repo_root))
    for pid, p in sorted(ledger["perturbations"].items(), key=lambda kv: perturbation_key(kv[0])):
        if not p["in_specs"]:
            continue
        entries = [e for e in ledger["evidence"] if e["perturbation"] == pid]
        for e in entries:
            tests.setdefault(e["gate"].split("::", 1)[0], set()).add(e["gate"])
        mutant = {"id": pid, "mutatorName": pid, "description": f"{p['title']} (target {p['target']}"
                  + (f"; covers {', '.join(p['covers'])}" if p["covers"] else "") + ")"}
        try:
            path = find_source(p["target"], search)
        except TargetNotFound as exc:
            key = f"{p['target'].replace('.', '/')}.py"
            files.setdefault(key, {"language": "python", "source": "", "mutants": []})
            files[key]["mutants"].append({**mutant, "location": {"start": {"line": 1, "column": 1},
                                                                  "end": {"line": 1, "column": 1}},
                                          "status": "Ignored", "statusReason": f"target not found: {exc}"})
            continue
        key = display_path(path, repo_root)
        original, _ = read_source(path)
        entry = files.setdefault(key, {"language": "python", "source": original, "mutants": []})
        try:
            patched = apply_edits(original, p["edits"], perturbation_id=pid, file=key)
        except PatchError as exc:
            entry["mutants"].append({**mutant, "location": {"start": {"line": 1, "column": 1},
                                                            "end": {"line": 1, "column": 1}},
                                     "status": "Ignored", "statusReason": f"the edits do not apply: {exc}"})
            continue
        start, end, replacement = span(original, patched, p["edits"])
        entry["mutants"].append({**mutant, "replacement": replacement,
                                 "location": {"start": _position(original, start), "end": _position(original, end)},
                                 **_status(pid, entries)})
    test_files = {}
    for file, gates in sorted(tests.items()):
        full = repo_root / file if not Path(file).is_absolute() else Path(file)
        tf = {"tests": [{"id": g, "name": g.split("::", 1)[-1]} for g in sorted(gates)]}
        if full.is_file():
            tf["source"] = full.read_text(encoding="utf-8")
        test_files[display_path(full, repo_root) if full.is_file() else file] = tf
    import fidelity

    return {"schemaVersion": SCHEMA_VERSION, "thresholds": dict(THRESHOLDS),
            "framework": {"name": "fidelity", "version": getattr(fidelity, "__version__", "0")},
            "files": dict(sorted(files.items())), "testFiles": test_files}
