"""Blind spots found by `fidelity discover`, gathered for the ledger (data only, no layout).

Reads the discovery records (fidelity.discover.records: `<reports>/discovery/...json`) and the
explanations beside the equations (fidelity.discover.explanations: `equivalent:` and
`out_of_scope:` entries naming `module:key`), and puts each recorded module of ours under the
papers whose equations name it (an equation's `code:` entries are `module:qualname`; a module
belongs to every paper with such an entry). The result, `ledger["discovery"]`:

  records_dir   where the records were read (repo-relative)
  records       how many records were read
  error         None, or why the records or the explanations cannot be used (a corrupt
                record, a mutant explained twice); then nothing else is filled in
  modules       {module: entry} for the project's own code (subject null), by module name
  unclaimed     the recorded modules of ours that no equation names
  other_subjects [{subject, in_third_party, modules: [entry]}]: records of someone else's
                package (`discover --subject`); in_third_party when the ledger's third-party
                part holds that subject's gate run (its findings are rendered there)

and `paper["discovery"]` = {"modules": the modules its equations name, recorded or not}.

An entry: module, subject, target_file (as the module name spells it), record (its file),
recorded_at, current (True / False / None when it cannot be told), stale_reasons
(records.staleness, the words the check stage prints), papers and equations naming it,
operators and counts (operator -> outcome -> count, as the record holds them), totals
(outcome -> count), dropped, gates_set_aside, summary ({blind_spots, explained, unexplained,
undecided}), and mutants: every recorded mutant with its `name` (module:key), id, key, line,
function, operator, description, outcome, killed_by, detail, diff, probes (how many inputs the
equivalence decision tried, None without one), max_difference, witness (a blind spot's
{input, difference, error}, an undecided mutant's sentence, or None) and explanation (None, or
{kind, reason, equation, paper, where} from the spec).

Nothing here reads the clock; non-finite numbers are written as the strings jsonio uses.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from fidelity.report.shown_paths import display_path

# the outcomes of fidelity.discover.run.OUTCOMES, in its order (not imported from there: that
# module imports torch, which the ledger does not need)
OUTCOMES = ("killed", "error", "equivalent", "blind_spot", "undecided")
LISTED = ("blind_spot", "undecided")     # the outcomes the ledger lists one by one


def _finite(value):
    """A number as strict JSON holds it (the strings "NaN", "Infinity", "-Infinity" otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        from fidelity.evidence import jsonio

        return jsonio.encode_float(value)
    return value


def _witness(equivalence: dict | None):
    if not equivalence:
        return None
    w = equivalence.get("witness")
    if isinstance(w, dict):
        return {"input": w.get("input"), "difference": _finite(w.get("difference")), "error": w.get("error")}
    return w


def witness_text(m: dict) -> str:
    """A gathered mutant's witness as one line: the input that tells it apart and by how much (a
    blind spot), or why no probe decided it (undecided); its detail when it has no equivalence
    decision (e.g. "no gate imports this module")."""
    w = m["witness"]
    if isinstance(w, dict):
        d = w.get("difference")
        shown = f"{d:.6g}" if isinstance(d, float) else str(d)
        return f"{w.get('input')}: differs by {shown}" + (f" ({w['error']})" if w.get("error") else "")
    if w:
        return str(w)
    return m["detail"] or "—"


def _gates_path(repo_root: Path, gates_dir) -> str:
    """The gate suite's path as `fidelity discover` passes it (relative to the root)."""
    if gates_dir is None:
        from fidelity import project

        try:
            gates_dir = project.load(repo_root).gates
        except project.ProjectError:
            gates_dir = Path(repo_root) / "tests" / "gates"
    p = Path(os.path.abspath(gates_dir))
    try:
        return p.relative_to(Path(repo_root).resolve()).as_posix()
    except ValueError:
        return str(p)


def _subject_environment(subject: str | None):
    """(environment, None) for `current_hashes`, or (None, why) when the subject's reference is not
    known here by name (a `module:object` given to `discover --subject`)."""
    if not subject:
        return None, None
    from fidelity.subjects import registry

    ref = registry.named_references().get(subject)
    if ref is None:
        return None, (f"cannot tell whether it is current: subject {subject!r} is not known here by name, so "
                      f"the gate run it was recorded with cannot be rebuilt")
    return {registry.EXTRA_ENV: ref, registry.ONLY_ENV: subject}, None


def _explanation(e, cat, repo_root: Path) -> dict:
    eq = cat.equations.get(e.equation)
    where = f"{display_path(eq.file, repo_root)}:{eq.line}" if eq is not None else e.where
    return {"kind": e.kind, "reason": " ".join(e.reason.split()), "equation": e.equation, "paper": e.paper,
            "where": where}


def _entry(rec: dict, cat, explanations: dict, named_by: dict[str, list], repo_root: Path, now_of) -> dict:
    """`now_of(environment)`: the current hashes (records.HashesNow) of a subject setting."""
    from fidelity.discover import records

    module = rec["module"]
    env, unknown = _subject_environment(rec.get("subject"))
    if unknown:
        current, stale = None, [unknown]
    else:
        stale = records.staleness(rec, now_of(env).of(module))
        current = not stale
    mutants = []
    for m in rec["mutants"]:
        name = f"{module}:{m['key']}"
        eqv = m.get("equivalence") or None
        why = explanations.get(name) if not rec.get("subject") else None
        mutants.append({
            "name": name, "id": m.get("id"), "key": m["key"], "line": m.get("line"), "function": m.get("function"),
            "operator": m.get("operator"), "description": m.get("description", ""), "outcome": m["outcome"],
            "killed_by": list(m.get("killed_by") or []), "detail": m.get("detail") or "", "diff": m.get("diff"),
            "probes": None if eqv is None else len(eqv.get("inputs") or []),
            "max_difference": None if eqv is None else _finite(eqv.get("max_difference")),
            "witness": _witness(eqv),
            "explanation": None if why is None else _explanation(why, cat, repo_root),
        })
    counts = {op: {o: int(n) for o, n in row.items()} for op, row in sorted((rec.get("counts") or {}).items())}
    if not counts:  # an older or hand-made record: count what it holds
        for m in mutants:
            row = counts.setdefault(m["operator"], dict.fromkeys(OUTCOMES, 0))
            row[m["outcome"]] = row.get(m["outcome"], 0) + 1
        counts = dict(sorted(counts.items()))
    totals = dict.fromkeys(OUTCOMES, 0)
    for row in counts.values():
        for o, n in row.items():
            totals[o] = totals.get(o, 0) + n
    blind = [m for m in mutants if m["outcome"] == "blind_spot"]
    eqs = named_by.get(module, [])
    return {
        "module": module, "subject": rec.get("subject"), "target_file": rec.get("target_file"),
        "record": display_path(rec["_file"], repo_root), "recorded_at": rec.get("recorded_at"),
        "current": current, "stale_reasons": stale,
        "papers": sorted({p for _, p in eqs}), "equations": sorted({e for e, _ in eqs}),
        "counts": counts, "totals": totals, "dropped": dict(sorted((rec.get("dropped") or {}).items())),
        "gates_set_aside": list(rec.get("gates_set_aside") or []),
        "summary": {"mutants": len(mutants), "blind_spots": len(blind),
                    "explained": sum(1 for m in blind if m["explanation"]),
                    "unexplained": sum(1 for m in blind if not m["explanation"]),
                    "undecided": sum(1 for m in mutants if m["outcome"] == "undecided")},
        "mutants": mutants,
    }


def modules_named(cat) -> dict[str, list[tuple[str, str]]]:
    """module -> [(equation, paper)] of the equations whose `code:` names it."""
    out: dict[str, list[tuple[str, str]]] = {}
    for eq in cat.equations.values():
        for ref in eq.data.get("code", []):
            module = ref.split(":", 1)[0]
            if (eq.id, eq.paper) not in out.setdefault(module, []):
                out[module].append((eq.id, eq.paper))
    return dict(sorted(out.items()))


def gather(cat, *, repo_root: Path, reports_dir: Path, third_party: list[str] | None = None,
           gates_dir=None) -> dict:
    """ledger["discovery"] (see the module docstring). `third_party`: the subjects the ledger's
    third-party part holds (None: it has none)."""
    from fidelity.discover import explanations as explained
    from fidelity.discover import records

    repo_root = Path(repo_root)
    out = {"records_dir": display_path(records.discovery_root(reports_dir), repo_root), "records": 0, "error": None,
           "modules": {}, "unclaimed": [], "other_subjects": []}
    try:
        recs = records.load_all(reports_dir)
        explanations = explained.from_catalogue(cat)
    except (records.CorruptRecord, explained.DuplicateExplanation) as exc:
        out["error"] = str(exc)
        return out
    out["records"] = len(recs)
    named_by = modules_named(cat)
    tests = _gates_path(repo_root, gates_dir)
    others: dict[str, list[dict]] = {}
    hashes_now: dict[str, records.HashesNow] = {}  # one per subject setting, read once for all its records

    def now_of(env):
        setting = json.dumps(env, sort_keys=True)
        if setting not in hashes_now:
            hashes_now[setting] = records.HashesNow(repo_root, [tests], env)
        return hashes_now[setting]

    for rec in sorted(recs, key=lambda r: (r.get("subject") or "", r["module"])):
        entry = _entry(rec, cat, explanations, named_by, repo_root, now_of)
        if rec.get("subject"):
            others.setdefault(rec["subject"], []).append(entry)
        else:
            out["modules"][rec["module"]] = entry
    out["unclaimed"] = [m for m, e in out["modules"].items() if not e["papers"]]
    out["other_subjects"] = [{"subject": s, "in_third_party": s in (third_party or []), "modules": mods}
                             for s, mods in sorted(others.items())]
    return out


def of_paper(cat, paper: str) -> dict:
    """paper["discovery"]: the modules this paper's equations name (recorded or not)."""
    return {"modules": sorted(m for m, eqs in modules_named(cat).items() if any(p == paper for _, p in eqs))}
