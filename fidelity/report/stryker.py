"""The perturbations and the discovered mutants as a Stryker mutation-testing report
(reports/mutation-report.json).

Schema: mutation-testing-report-schema, schemaVersion "2"
(github.com/stryker-mutator/mutation-testing-elements, packages/report-schema),
so existing viewers (the mutation-testing-elements web component, the Stryker
dashboard) can open it. Files are keyed by the path the module's dotted name spells
(locate.module_path: `fidelity/impl/torch/sinkhorn.py`, `ot/bregman/_sinkhorn.py`), the
same on any machine and in any venv, never where the module happens to be installed.

One mutant per perturbation, in the file of its target module (mutatorName: the
perturbation's id and title, "P1: drop the row normalisation"):

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

Then one mutant per mutant `fidelity discover` recorded in the project's own code (the
ledger's `discovery.modules`; other subjects' records are findings about those packages and
stay out of this report of ours), in the file its record names (target_file), with id
`module:key` (the stable name a spec uses) and mutatorName its operator:

  location     the span the recorded diff changes (common prefix and suffix trimmed, then
               widened to whole tokens: `/` -> `//`, not an inserted `/`), when the diff
               applies to the source as it is now (a hunk moved by lines added elsewhere is
               found by its text); else the recorded line (statusReason says so);
               replacement the mutated text of that span
  status       from the record's outcome:
                 Killed        killed (killedBy: the gates that went red by their own assertion)
                 RuntimeError  error: only red for another reason (statusReason: the detail)
                 Ignored       equivalent ("equivalent: N probes" reached the mutated lines)
                 Survived      blind_spot: statusReason "blind spot, unexplained; witness: ..."
                 Survived      undecided: statusReason "undecided: ..." (see _discovered_status)
                 Ignored       a blind spot or undecided mutant the spec explains beside its
                               equation: "explained (out_of_scope|equivalent): reason (beside
                               eq); witness: ..." (a person judged it: the score does not count it)
               a stale record keeps its status (what it found stands until a new run) and its
               statusReason ends with why it is stale.

No times are written, so the same specs, sources and evidence give the same bytes.
"""
from __future__ import annotations

import re
from pathlib import Path

from fidelity.report.discovery import witness_text
from fidelity.evidence.outcome import Outcome
from fidelity.report.ledger.terms import group, perturbation_key
from fidelity.report.shown_paths import display_path

SCHEMA_VERSION = "2"
THRESHOLDS = {"high": 80, "low": 60}


def _position(text: str, index: int) -> dict:
    line = text.count("\n", 0, index) + 1
    start_of_line = text.rfind("\n", 0, index) + 1
    return {"line": line, "column": index - start_of_line + 1}


def _longest(agree, limit: int) -> int:
    """The largest n <= limit with agree(n), for a test that holds up to some n and fails beyond it.
    Halving with slice comparisons (C) instead of a character loop (Python): ~1,500 discovered
    mutants in files of thousands of characters took ~1.5 s that way."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if agree(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


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
        limit = min(len(original), len(patched))
        start = _longest(lambda n: original[:n] == patched[:n], limit)
        tail = _longest(lambda n: original[len(original) - n:] == patched[len(patched) - n:], limit - start)
        end = len(original) - tail
    replacement = patched[start: len(patched) - (len(original) - end)]
    assert original[:start] + replacement + original[end:] == patched
    return start, end, replacement


def _status(pid: str, entries: list[dict]) -> dict:
    current = [e for e in entries if e["current"]]
    stale = [e for e in entries if not e["current"]]
    covered = sorted(e["gate"] for e in current)
    out = {"coveredBy": covered, "testsCompleted": len(covered)}
    red = [e for e in current if e["outcome"] == Outcome.RED_BY_ASSERTION]
    other = [e for e in current if e["outcome"] == Outcome.RED_OTHER]
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
    if any(e["outcome"] == Outcome.SURVIVED for e in current):
        return {**out, "status": "Survived",
                "statusReason": "every gate that ran passed: " + ", ".join(covered)}
    if current and all(e["outcome"] == Outcome.SKIPPED for e in current):
        return {**out, "status": "NoCoverage", "statusReason": "every gate was skipped: " +
                "; ".join(f"{e['gate']}: {e['detail']}" for e in current)}
    why = f"no current evidence: run `fidelity perturb {pid}`"
    if stale:
        why += "; stale records: " + "; ".join(f"{e['gate']}: {', '.join(e['stale_reasons'])}" for e in stale)
    return {**out, "status": "Pending", "statusReason": why}


# ---------------------------------------------------------------- discovered mutants

def _diff_hunks(diff: str) -> list[tuple[int, str, str]]:
    """[(first old line, old text, new text)] of a unified diff as patching.unified_diff writes it
    (lines split at "\n" only; "\\ No newline at end of file" takes the newline off the line before)."""
    hunks, old, new, last = [], None, None, None
    for line in diff.split("\n"):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if m:
            first = int(m.group(1)) if m.group(2) != "0" else int(m.group(1)) + 1
            old, new = [], []
            hunks.append((first, old, new))
            continue
        if old is None:  # the ---/+++ header
            continue
        if line.startswith("\\"):
            for side in last or ():
                if side and side[-1].endswith("\n"):
                    side[-1] = side[-1][:-1]
            continue
        tag, text = line[:1], line[1:] + "\n"
        if tag == " ":
            old.append(text), new.append(text)
            last = (old, new)
        elif tag == "-":
            old.append(text)
            last = (old,)
        elif tag == "+":
            new.append(text)
            last = (new,)
    return [(first, "".join(o), "".join(n)) for first, o, n in hunks]


def patch_from_diff(original: str, diff: str) -> str | None:
    """`original` with the recorded diff applied, or None when the diff does not apply to it
    (the source moved since the record, or a diff this reader cannot follow)."""
    hunks = _diff_hunks(diff or "")
    if not hunks:
        return None
    lines = original.split("\n")
    offsets = [0]
    for text in lines:
        offsets.append(offsets[-1] + len(text) + 1)
    out, at = [], 0
    for first, old, new in hunks:
        start = offsets[min(first - 1, len(lines))] if first >= 1 else 0
        if original[start: start + len(old)] != old:
            # lines added or removed elsewhere since the record moved the hunk: its text, when
            # it occurs once, is where it went (the hunk carries its context lines)
            if not old or original.count(old) != 1:
                return None
            start = original.find(old)
        if start < at:
            return None
        out += [original[at:start], new]
        at = start + len(old)
    return "".join(out) + original[at:]


def _kind(c: str) -> str:
    return "word" if c.isalnum() or c == "_" else "space" if c.isspace() else "punct"


def widen_to_tokens(original: str, patched: str, start: int, end: int) -> tuple[int, int, str]:
    """The span [start, end) of `original` (with its common prefix and suffix already trimmed), widened
    so that it does not cut a token (a name, a number, a run of operator characters) in two: `/` ->
    `//` reads as that, not as `/` inserted after `/`. Returns (start, end, replacement)."""
    tail = len(original) - end

    def inner_left():   # the first character inside the span, in the original or in the replacement
        return [c for c in (original[start:end][:1], patched[start:len(patched) - tail][:1]) if c]

    def inner_right():
        return [c for c in (original[start:end][-1:], patched[start:len(patched) - tail][-1:]) if c]

    while start > 0 and _kind(original[start - 1]) != "space" and \
            any(_kind(c) == _kind(original[start - 1]) for c in inner_left()):
        start -= 1
    while tail > 0 and _kind(original[end]) != "space" and any(_kind(c) == _kind(original[end]) for c in inner_right()):
        end, tail = end + 1, tail - 1
    replacement = patched[start: len(patched) - tail]
    assert original[:start] + replacement + original[end:] == patched
    return start, end, replacement


def _line_location(source: str, line: int | None) -> dict:
    lines = source.split("\n")
    n = min(max(line or 1, 1), len(lines))
    return {"start": {"line": n, "column": 1}, "end": {"line": n, "column": len(lines[n - 1]) + 1}}


def _discovered_status(m: dict) -> dict:
    outcome = m["outcome"]
    if outcome == "killed":
        return {"status": "Killed", "killedBy": list(m["killed_by"]), "coveredBy": list(m["killed_by"]),
                "statusReason": "red by its own assertion: " + ", ".join(m["killed_by"])}
    if outcome == "error":
        return {"status": "RuntimeError", "statusReason": m["detail"] or "red for another reason (not a kill)"}
    if outcome == "equivalent":
        why = f"equivalent: {m['probes'] or 0} probes"
        if m["max_difference"] is not None:
            why += f" reached the mutated lines; largest difference {m['max_difference']}"
        return {"status": "Ignored", "statusReason": why}
    if outcome in ("blind_spot", "undecided"):
        x = m["explanation"]
        seen = f"witness: {witness_text(m)}" if outcome == "blind_spot" else f"undecided: {witness_text(m)}"
        if x is not None:  # judged beside its equation, with a reason: not a survivor the score counts
            return {"status": "Ignored", "statusReason": f"explained ({x['kind']}): {x['reason']} "
                                                         f"(beside {x['equation']}); {seen}"}
        if outcome == "blind_spot":
            return {"status": "Survived", "statusReason": f"blind spot, unexplained; {seen}"}
        # Survived, not NoCoverage: in Stryker, NoCoverage says no test ran the mutant, but the
        # gates covering the module did run with it in place and none went red, which is what
        # Survived says. "Undecided" is about the equivalence probes (none reached the mutated
        # lines), not the tests, so it goes in the statusReason; like Survived it counts against
        # the score, and the schema has no status for "not known".
        return {"status": "Survived", "statusReason": seen}
    return {"status": "Pending", "statusReason": f"outcome {outcome!r} is not one this report knows"}


def _add_discovered(ledger: dict, files: dict, tests: dict, repo_root: Path, search: list[str]) -> None:
    """Every mutant `fidelity discover` recorded in our own code, in its file (see the docstring)."""
    from fidelity.targets.errors import TargetNotFound
    from fidelity.targets.locate import find_source, module_path
    from fidelity.targets.patching import read_source

    for module, e in sorted(((ledger.get("discovery") or {}).get("modules") or {}).items()):
        key = e["target_file"] or module_path(module, "")
        try:
            path = find_source(module, search)
        except TargetNotFound:
            path = repo_root / key if (repo_root / key).is_file() else None
        source = read_source(str(path))[0] if path is not None else ""
        entry = files.setdefault(key, {"language": "python", "source": source, "mutants": []})
        stale = "" if e["current"] is not False else "; the record is stale: " + "; ".join(e["stale_reasons"])
        for m in e["mutants"]:
            for g in m["killed_by"]:
                tests.setdefault(g.split("::", 1)[0], set()).add(g)
            where = f"line {m['line']}" + (f" in {m['function']}" if m["function"] else "")
            mutant = {"id": m["name"], "mutatorName": m["operator"],
                      "description": f"{m['description']} ({m['id']}, {where}; fidelity discover)",
                      **_discovered_status(m)}
            patched = patch_from_diff(entry["source"], m["diff"]) if entry["source"] else None
            if patched is not None and patched != entry["source"]:
                start, end, _ = span(entry["source"], patched, [])
                start, end, replacement = widen_to_tokens(entry["source"], patched, start, end)
                mutant.update(location={"start": _position(entry["source"], start),
                                        "end": _position(entry["source"], end)}, replacement=replacement)
            else:
                added = [line[1:] for line in (m["diff"] or "").split("\n")
                         if line.startswith("+") and not line.startswith("+++")]
                mutant.update(location=_line_location(entry["source"], m["line"]), replacement="\n".join(added))
                mutant["statusReason"] += ("; the recorded diff does not apply to the source as it is now: the "
                                           "location is the recorded line" if entry["source"] else
                                           "; the module's source is not found here")
            mutant["statusReason"] += stale
            entry["mutants"].append(mutant)


def _mutant_order(m: dict):
    """Perturbations first (P2 before P10), then the discovered mutants by location."""
    if ":" not in m["id"]:
        return (0, perturbation_key(m["id"]), 0, 0)
    start = m["location"]["start"]
    return (1, (0, 0, ""), start["line"], start["column"], m["id"])


def build(ledger: dict, repo_root: Path) -> dict:
    """The report as a dict (see the module docstring)."""
    from fidelity.targets.errors import PatchError, TargetNotFound
    from fidelity.targets.locate import child_search_path, find_source, module_path
    from fidelity.targets.patching import apply_edits, read_source

    repo_root = Path(repo_root)
    files: dict[str, dict] = {}
    tests: dict[str, set] = {}
    search = child_search_path(str(repo_root))
    by_pert = group(ledger["evidence"], "perturbation")   # one pass, not a scan of all the evidence per perturbation
    for pid, p in sorted(ledger["perturbations"].items(), key=lambda kv: perturbation_key(kv[0])):
        if not p["in_specs"]:
            continue
        entries = by_pert.get(pid, [])
        for e in entries:
            tests.setdefault(e["gate"].split("::", 1)[0], set()).add(e["gate"])
        mutant = {"id": pid, "mutatorName": f"{pid}: {p['title']}" if p["title"] else pid,
                  "description": f"{p['title']} (target {p['target']}"
                  + (f"; covers {', '.join(p['covers'])}" if p["covers"] else "") + ")"}
        try:
            path = find_source(p["target"], search)
        except TargetNotFound as exc:
            key = module_path(p["target"], "")
            files.setdefault(key, {"language": "python", "source": "", "mutants": []})
            files[key]["mutants"].append({**mutant, "location": {"start": {"line": 1, "column": 1},
                                                                  "end": {"line": 1, "column": 1}},
                                          "status": "Ignored", "statusReason": f"target not found: {exc}"})
            continue
        key = module_path(p["target"], path)  # the path the name spells, not where it is installed
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
    _add_discovered(ledger, files, tests, repo_root, search)
    for entry in files.values():
        entry["mutants"].sort(key=_mutant_order)
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
