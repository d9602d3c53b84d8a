"""Gather the ledger: one plain, JSON-safe dict from the specs, the claims, the
evidence, the gate run and the fixtures' predictions.

Every renderer (Markdown, HTML, JSON, the mutation report) reads this dict and
nothing else, so they cannot disagree. Nothing here reads the clock: the only
times in the ledger are the evidence records' own `recorded_at`.

The rules the renderers rely on:
- an evidence record is CURRENT when fidelity.evidence.staleness finds nothing (gate file,
  target source, fixtures and the perturbation's edits hash as recorded);
- a gate is ACCEPTED with a current record that accepts it (EvidenceRecord.accepted:
  red by its own assertion, green after, enough clean runs; fidelity.evidence.verdict);
- an equation is ACCEPTED when an accepted gate names it, and ACCEPTED BY the perturbations that cover
  it (`covers:`) and under which every gate they list went red by current evidence; `gates_accepted_by`
  names every perturbation its accepted gates went red under, other equations' perturbations included;
- a red-to-green row is OBSERVED when it comes from an evidence record (marked
  STALE when that record is no longer current) and PREDICTED ONLY when it comes
  from a perturbation's `predicted` list with no record behind it. A predicted
  reading is kept in its own column, never in the observed one;
- a third-party subject (a gate run recorded with `fidelity report --subject NAME`)
  is kept apart from ours: its cells sit under the subject matrix's `third_party`
  keys and its conformance under the ledger's `third_party` list (passed / finding
  / not run per equation, the verdicts of `fidelity check --subject`). A finding is
  about that package: it touches no gate's status, acceptance or summary count of
  ours. Without third-party runs in the gate run these keys are absent, and the
  ledger is what it was before they existed.
- blind spots found by `fidelity discover` (its discovery records, with the explanations
  beside the equations) are gathered by fidelity.report.discovery into `discovery`, and
  each paper's `discovery` names the modules its equations' `code:` entries name. They
  touch no perturbation, gate or summary count: they are a second, separate account.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from fidelity.evidence.outcome import Outcome
from fidelity.spec import choices
from fidelity.report import coverage, discovery, performance
from fidelity.report import separation as sep
from fidelity.report.shown_paths import display_path

SCHEMA = "fidelity.report.ledger/1"
OBSERVED, OBSERVED_STALE, PREDICTED_ONLY = "OBSERVED", "OBSERVED, STALE", "PREDICTED ONLY"
IMPLEMENTED = ("implemented", "deviates")
FINDING, ERROR, NOT_PROVIDED = "finding", "error", "not provided"   # a third-party subject's cells
CHOICE = "differs from our choice"  # a third-party cell whose every failure is a difference from a tier-c choice


# ---------------------------------------------------------------- small helpers

def perturbation_key(pid: str):
    """P2 before P10; anything else after, by name."""
    m = re.fullmatch(r"P(\d+)", pid)
    return (0, int(m.group(1)), pid) if m else (1, 0, pid)


def where_text(where: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in where.items())


def first_sentence(text: str | None, limit: int = 240) -> str:
    text = " ".join((text or "").split())
    m = re.search(r"(?<=[.!?])\s", text)
    out = text[: m.start()] if m else text
    return out if len(out) <= limit else out[: limit - 3].rstrip() + "..."


def _paper_of_equation(cat, eq: str) -> str:
    item = cat.equations.get(eq)
    return item.paper if item is not None else eq.split(".", 1)[0]


# ---------------------------------------------------------------- evidence

def _evidence(cat, records: list, repo_root: Path, reports_dir: Path) -> list[dict]:
    """One JSON-safe entry per record, with its verdict (fidelity.evidence.verdict)."""
    from fidelity.evidence import paths, verdict
    from fidelity.report.gaterun import readings_summary

    fixture_shown: dict[str, str] = {}   # a few fixtures named by thousands of records: resolve each once

    def fixture(f: str) -> str:
        if f not in fixture_shown:
            fixture_shown[f] = display_path(paths.resolve(f, repo_root), repo_root)
        return fixture_shown[f]

    evidence_root = paths.evidence_root(reports_dir)
    out = []
    for j in verdict.judge(records, repo_root, {pid: dict(p.data) for pid, p in cat.perturbations.items()}):
        rec = j.record
        pred = rec.predicted
        out.append({
            "perturbation": rec.perturbation, "gate": rec.gate, "title": rec.title,
            "target": rec.target, "outcome": rec.outcome.value, "reading": rec.reading,
            "predicted": None if pred is None else {"reading": pred.get("reading"), "note": pred.get("note", "")},
            "green_after": rec.green_after, "recorded_at": rec.recorded_at,
            "accepts": rec.accepted, "clean_runs": rec.clean_runs,
            "versions": {k: rec.versions.get(k) for k in ("python", "torch", "fidelity")},
            "detail": rec.detail, "listed": rec.listed,
            "equations": sorted(rec.equations), "gate_file": rec.gate_file,
            "fixtures": sorted(fixture(f) for f in rec.fixtures),
            "current": j.current, "stale_reasons": list(j.stale_reasons),
            "path": display_path(paths.record_path(evidence_root, rec.perturbation, rec.gate), repo_root),
            **readings_summary(list(rec.instances)),
        })
    return out


def group(entries: list[dict], key: str) -> dict[str, list[dict]]:
    """key's value -> its entries, in the entries' order (one pass: looking each one up by scanning
    all ~8,000 entries per gate and per perturbation was quadratic)."""
    out: dict[str, list[dict]] = {}
    for e in entries:
        out.setdefault(e[key], []).append(e)
    return out


def _diffs(records: list, entries: list[dict]) -> dict[str, str]:
    """perturbation -> its diff, from a current record when there is one."""
    diffs: dict[str, str] = {}
    for rec, e in sorted(zip(records, entries), key=lambda re_: not re_[1]["current"]):
        if rec.diff and rec.perturbation not in diffs:
            diffs[rec.perturbation] = rec.diff
    return diffs


# ---------------------------------------------------------------- gates

def _gates(cat, entries: list[dict], by_gate: dict[str, list[dict]], gate_run: dict | None,
           repo_root: Path) -> dict[str, dict]:
    gates: dict[str, dict] = {}

    def gate(gid: str) -> dict:
        return gates.setdefault(gid, {"gate": gid, "file": gid.split("::", 1)[0], "equations": set(),
                                      "run": None, "fixtures_read": set(), "rtol": None, "separations": {},
                                      "accepted": False, "accepted_by": set(), "stale_only": False,
                                      "mechanism": None, "gate_class": None})

    for row in (gate_run or {}).get("gates", []):
        g = gate(row["gate"])
        g["equations"].update(row.get("equations", []))
        g["run"] = {"status": row["status"], "instances": row.get("instances"), "subjects": row.get("subjects", {}),
                    "failed": row.get("failed", [])}
        g["fixtures_read"].update(display_path(Path(repo_root) / f, repo_root) for f in row.get("fixtures_read", []))
        g["rtol"] = row.get("rtol")
        g["separations"] = dict(row.get("separations") or {})
        g["mechanism"], g["gate_class"] = row.get("mechanism"), row.get("gate_class")
    for e in entries:
        g = gate(e["gate"])
        g["equations"].update(e["equations"])
        if e.get("gate_file"):
            g["file"] = e["gate_file"]
        if e["current"]:
            g["fixtures_read"].update(e["fixtures"])
            if g["rtol"] is None and e.get("rtol") is not None:
                g["rtol"] = e["rtol"]
            if gate_run is None:
                for name, value in e["separations"].items():
                    g["separations"][name] = min(value, g["separations"].get(name, value))
            if e["accepts"]:
                g["accepted"] = True
                g["accepted_by"].add(e["perturbation"])
    for g in gates.values():
        has = by_gate.get(g["gate"], [])
        g["stale_only"] = bool(has) and not any(e["current"] for e in has)
        g["equations"] = sorted(g["equations"])
        g["fixtures_read"] = sorted(g["fixtures_read"])
        g["accepted_by"] = sorted(g["accepted_by"], key=perturbation_key)
        g["papers"] = sorted({_paper_of_equation(cat, eq) for eq in g["equations"]})
    return dict(sorted(gates.items()))


# ---------------------------------------------------------------- perturbations

def _perturbation_status(current: list[dict], any_records: bool) -> str:
    if not current:
        return "stale" if any_records else "not run"
    outcomes = {e["outcome"] for e in current}
    if any(e["accepts"] for e in current):
        return "caught"
    if any(e["outcome"] == Outcome.RED_BY_ASSERTION and e["green_after"] is True for e in current):
        return "red, after too few clean runs"
    if Outcome.RED_BY_ASSERTION in outcomes:
        return "red, not green after"
    if Outcome.SURVIVED in outcomes:
        return "survived"
    if Outcome.RED_OTHER in outcomes:
        return "red for another reason only"
    return "skipped"


def _perturbations(cat, entries: list[dict], by_pert: dict[str, list[dict]], diffs: dict[str, str],
                   repo_root: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    ids = list(cat.perturbations) + [e["perturbation"] for e in entries if e["perturbation"] not in cat.perturbations]
    for pid in sorted(dict.fromkeys(ids), key=perturbation_key):
        item = cat.perturbations.get(pid)
        mine = by_pert.get(pid, [])
        current = [e for e in mine if e["current"]]
        data = item.data if item else {}
        caught = sorted(e["gate"] for e in current if e["accepts"])
        listed = list(data.get("gates", []))
        out[pid] = {
            "id": pid, "in_specs": item is not None,
            "paper": item.paper if item else None,
            "title": data.get("title") or (mine[0]["title"] if mine else ""),
            "target": data.get("target") or (mine[0]["target"] if mine else ""),
            "edits": data.get("edits", []),
            "covers": list(data.get("covers", [])),
            "listed_gates": listed,
            "predicted": [{"gate": p["gate"], "reading": p["reading"], "oracle": p.get("oracle"),
                           "note": p.get("note", "")} for p in data.get("predicted", [])],
            "defined_at": f"{display_path(item.file, repo_root)}:{item.line}" if item else None,
            "status": _perturbation_status(current, bool(mine)),
            "caught_by": caught,
            "listed_not_red": sorted(g for g in listed if g not in caught and any(e["gate"] == g for e in current)),
            "outcomes": {e["gate"]: e["outcome"] for e in sorted(current, key=lambda e: e["gate"])},
            "stale_records": len(mine) - len(current),
            "diff": diffs.get(pid),
        }
    return out


def _red_to_green(pert: dict, mine: list[dict]) -> list[dict]:
    """The perturbation's rows; `mine`: its evidence entries."""
    rows = []
    spec_pred = {p["gate"]: p for p in pert["predicted"]}
    seen = set()
    for e in sorted(mine, key=lambda e: e["gate"]):
        seen.add(e["gate"])
        pred = e["predicted"] or ({"reading": spec_pred[e["gate"]]["reading"], "note": spec_pred[e["gate"]]["note"]}
                                  if e["gate"] in spec_pred else None)
        if not (e["outcome"] in (Outcome.RED_BY_ASSERTION, Outcome.RED_OTHER) or pred is not None or e["listed"]):
            continue
        rows.append({"perturbation": pert["id"], "title": pert["title"], "gate": e["gate"], "outcome": e["outcome"],
                     "observed": e["reading"] if e["outcome"] == Outcome.RED_BY_ASSERTION else None,
                     "predicted": None if pred is None else pred["reading"],
                     "predicted_note": "" if pred is None else pred.get("note", ""),
                     "green_after": e["green_after"], "when": e["recorded_at"],
                     "basis": OBSERVED if e["current"] else OBSERVED_STALE,
                     "stale_reasons": e["stale_reasons"], "detail": e["detail"]})
    for gate, p in sorted(spec_pred.items()):
        if gate in seen:
            continue
        rows.append({"perturbation": pert["id"], "title": pert["title"], "gate": gate, "outcome": None,
                     "observed": None, "predicted": p["reading"], "predicted_note": p.get("note", ""),
                     "green_after": None, "when": None, "basis": PREDICTED_ONLY, "stale_reasons": [],
                     "detail": "no evidence record: run `fidelity perturb " + pert["id"] + "`"})
    return rows


# ---------------------------------------------------------------- separations

def _separations(cat, gates: dict[str, dict], fixtures_dir: Path, repo_root: Path) -> list[dict]:
    import json

    from fidelity.evidence import jsonio

    rows = []
    for g in gates.values():
        for name, value in sorted(g["separations"].items()):
            rows.append({"gate": g["gate"], "fixture": None, "prediction": name, "field": None,
                         "relative_distance": None, "rtol": g["rtol"], "separation": jsonio.encode_float(value),
                         "source": "recorded by the gate", "weak": sep.is_weak(value), "readers": [g["gate"]],
                         "description": "",
                         "papers": g["papers"], "why_not": None})
    paths = sorted(Path(fixtures_dir).glob("*.json")) if Path(fixtures_dir).is_dir() else []
    for path in paths:
        try:
            fixture = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(fixture, dict) or "id" not in fixture:
            continue
        rel = display_path(path, repo_root)
        readers = [g for g in gates.values() if rel in g["fixtures_read"]]
        papers = sorted({_paper_of_equation(cat, eq) for eq in fixture.get("equations", [])})
        for p in sep.fixture_predictions(fixture):
            rel = p["relative_distance"]
            row = {"fixture": fixture["id"], "prediction": p["prediction"], "field": p["field"],
                   "description": first_sentence(p["description"], 160),
                   "relative_distance": jsonio.encode_float(rel), "papers": papers,
                   "readers": [g["gate"] for g in readers], "gate": None, "rtol": None, "separation": None,
                   "weak": None, "source": "not computed", "why_not": None}
            with_rtol = [g for g in readers if g["rtol"] is not None]
            if rel is None:
                row["why_not"] = "the prediction and the expected value differ in shape"
            elif rel == 0:
                row.update(separation=0.0, weak=True, source="distance 0: no tolerance separates it")
            elif with_rtol:
                weakest = max(with_rtol, key=lambda g: (g["rtol"], g["gate"]))  # the loosest tolerance
                s = sep.in_tolerances(rel, weakest["rtol"])
                row.update(gate=weakest["gate"], rtol=weakest["rtol"], separation=jsonio.encode_float(s),
                           weak=sep.is_weak(s), source="fixture prediction / the loosest reading gate's rtol")
            elif readers:
                row["why_not"] = "no gate reading this fixture records its tolerance (a reading named 'rtol')"
            else:
                row["why_not"] = "no gate run or evidence record shows a gate reading this fixture"
            rows.append(row)
    return rows


# ---------------------------------------------------------------- subject matrix

def _strip_skip(reason: str) -> str:
    """'Skipped: not run: no CUDA device' -> 'no CUDA device'."""
    return re.sub(r"^(Skipped:\s*)?(not run:\s*)?", "", reason) or reason


def _failures_under(row: dict, equation: str, lacked: frozenset[str]) -> list[dict]:
    """A third-party gate row's failures attributed to `equation` (fidelity.gaterun.conformance.checked)."""
    from fidelity.gaterun.conformance import checked

    return [f for f in row.get("failed") or [] if equation in checked(f, row, lacked)]


def _third_party_cell(cat, equation: str, covering: list[dict], name: str, lacked: frozenset[str]) -> dict:
    """One third-party subject's cell: its gate rows (from its own run) that cover the equation. A row counts as
    failed here only where a failure is attributed to this equation (a finding about another equation of the same
    gate, or one on a path the subject lacks, is not this one's); a cell whose failures all differ only from our
    tier-c choices says so, never 'finding'."""
    from fidelity.gaterun.conformance import LACKED_REASON, checked

    if not covering:
        return {"status": NOT_PROVIDED, "passed": 0, "failed": 0, "not_run": 0, "reasons": []}
    if equation in lacked:  # a placement the subject has no path for: as check --subject says, not run
        return {"status": "not run", "passed": 0, "failed": 0, "not_run": len(covering), "reasons": [LACKED_REASON]}
    runs = [(r, r["subjects"][name]) for r in covering if name in r.get("subjects", {})]
    failing = [(row, _failures_under(row, equation, lacked)) for row, r in runs if r["status"] == "failed"]
    failing = [(row, fs) for row, fs in failing if fs]
    failed = len(failing)
    passed = sum(1 for row, r in runs if r["passed"] and not any(row is f for f, _ in failing))
    reasons = sorted({_strip_skip(x) for _, run in runs for x in run.get("not_run_reasons", [])})
    ours = failed and all(choices.our_choices(cat, checked(f, row, lacked)) for row, fs in failing for f in fs)
    status = CHOICE if ours else FINDING if failed else "passed" if passed else "not run"
    return {"status": status, "passed": passed, "failed": failed, "not_run": len(covering) - passed - failed,
            "reasons": reasons}


def _subject_matrix(cat, paper: str, gates: dict[str, dict], gate_run: dict | None, note: str) -> dict:
    from fidelity.gaterun.conformance import paths_not_run

    if gate_run is None:
        return {"note": note, "subjects": [], "rows": []}
    names = {s["name"] for s in gate_run.get("subjects", [])}
    for g in gates.values():
        if g["run"]:
            names.update(g["run"]["subjects"])
    subjects = sorted(names)
    unavailable = {s["name"]: s.get("reason") for s in gate_run.get("subjects", []) if not s.get("available", True)}
    third = ({t["name"]: t.get("gates", []) for t in gate_run["third_party"]}
             if "third_party" in gate_run else None)
    lacked = {n: paths_not_run(cat, tg, n) for n, tg in (third or {}).items()}
    rows = []
    for eq in cat.equations_of(paper):
        covering = [g for g in gates.values() if eq.id in g["equations"] and g["run"]]
        third_covering = {n: [r for r in tg if eq.id in r.get("equations", [])] for n, tg in (third or {}).items()}
        if not covering and not any(third_covering.values()) and eq.data["status"] not in IMPLEMENTED:
            continue
        cells = {}
        for s in subjects:
            if not covering:
                cells[s] = {"status": "no gate", "passed": 0, "failed": 0, "not_run": 0, "reasons": []}
                continue
            runs = [g["run"]["subjects"][s] for g in covering if s in g["run"]["subjects"]]
            reasons = sorted({_strip_skip(r) for r in (x for run in runs for x in run.get("not_run_reasons", []))})
            passed = sum(1 for r in runs if r["status"] == "passed")
            failed = sum(1 for r in runs if r["status"] == "failed")
            not_run = len(covering) - passed - failed
            if not runs:
                reasons = [f"subject unavailable: {unavailable[s]}" if unavailable.get(s) else
                           "no gate of this equation runs this subject (it does not provide the mechanism)"]
            status = "failed" if failed else "passed" if passed else "not run"
            cells[s] = {"status": status, "passed": passed, "failed": failed, "not_run": not_run, "reasons": reasons}
        row = {"equation": eq.id, "status": eq.data["status"], "gates": [g["gate"] for g in covering],
               "cells": cells}
        if third is not None:
            row["third_party"] = {n: _third_party_cell(cat, eq.id, c, n, lacked[n])
                                  for n, c in sorted(third_covering.items())}
        rows.append(row)
    matrix = {"note": note, "subjects": subjects, "rows": rows}
    if third is not None:
        # a package gets a column in the papers whose equations its gates cover, and only there
        matrix["third_party"] = [n for n in sorted(third)
                                 if any(r["third_party"][n]["status"] != NOT_PROVIDED for r in rows)]
    return matrix


# ---------------------------------------------------------------- third-party subjects

def _instance(nodeid: str) -> str:
    """'tests/gates/f.py::test_x[pot-cpu-f32]' -> 'pot-cpu-f32' ('' without parameters)."""
    m = re.search(r"\[(.*)\]$", nodeid)
    return m.group(1) if m else ""


def _third_party(cat, gate_run: dict | None) -> list[dict] | None:
    """Each third-party subject's conformance, equation by equation (None: the run has no such key).

    The verdicts are fidelity.gaterun.conformance.equation_verdicts, the ones `fidelity check
    --subject` prints (passed / finding / error / not run): a finding or an error is about
    that package and counts in no verdict of ours.
    """
    if gate_run is None or "third_party" not in gate_run:
        return None
    from fidelity.gaterun.conformance import equation_verdicts

    out = []
    for run in gate_run["third_party"]:
        rows = run.get("gates", [])
        recorded = {f["nodeid"]: f for r in rows for f in r.get("failed", [])}
        equations = []
        for v in equation_verdicts(cat, rows, run["name"]):
            # a finding (the gate's assertion) and an error (the package raised) are both about the
            # package; each keeps its outcome so the page can say which it was
            findings = [{"gate": f["gate"], "nodeid": f["nodeid"], "instance": _instance(f["nodeid"]),
                         "outcome": outcome,
                         "kind": recorded.get(f["nodeid"], {}).get("kind"),
                         "exc_type": recorded.get(f["nodeid"], {}).get("exc_type"),
                         "readings": dict(sorted((f.get("readings") or {}).items())),
                         "message": f["message"].splitlines()[0] if f["message"] else "",
                         **({"choices": f["choices"]} if f.get("choices") else {})}
                        for outcome, group in ((FINDING, v["findings"]), (ERROR, v["errors"]),
                                               (CHOICE, v.get("differs_from_our_choice", []))) for f in group]
            equations.append({"equation": v["equation"], "paper": v["paper"],
                              "verdict": v["verdict"],
                              "gates": dict(sorted(v["gates"].items())), "findings": findings,
                              "not_run_reasons": sorted({_strip_skip(r) for r in v["not_run_reasons"]})})
        verdicts = Counter(e["verdict"] for e in equations)
        out.append({"name": run["name"], "reference": run.get("reference"), "description": run.get("description", ""),
                    "available": run.get("available", True), "reason": run.get("reason"),
                    "versions": dict(run.get("versions") or {}), "returncode": run.get("returncode"),
                    "collect_errors": len(run.get("collect_errors") or []), "gates": len(rows),
                    "gates_with_findings": sum(1 for r in rows if r.get("status") == "failed"),
                    "passed": verdicts.get("passed", 0), "findings": verdicts.get(FINDING, 0),
                    "errors": verdicts.get(ERROR, 0), "differs_from_our_choice": verdicts.get(CHOICE, 0),
                    "not_run": verdicts.get("not run", 0), "equations": equations})
    return sorted(out, key=lambda t: t["name"])


# ---------------------------------------------------------------- one paper

def _provenance(item, repo_root: Path) -> dict:
    d = item.data
    return {"arxiv": d["arxiv"], "version": d["version"], "url": f"https://arxiv.org/abs/{d['arxiv']}{d['version']}",
            "title": d["title"], "authors": list(d["authors"]), "read_date": d["read"]["date"],
            "read_where": list(d["read"]["where"]), "author_code": dict(d["author_code"]),
            "notes": " ".join((d.get("notes") or "").split()),
            "defined_at": f"{display_path(item.file, repo_root)}:{item.line}"}


def _accepted_by(eq: str, perts: dict[str, dict]) -> list[str]:
    """The perturbations that accept equation `eq`: those that cover it (`covers:`) and under which every
    gate they list went red by its own assertion, green after, by current evidence (`caught_by`). A gate of
    the equation red under a perturbation of another equation shows that gate alive, not this equation held."""
    return [pid for pid, p in perts.items()
            if eq in p["covers"] and p["listed_gates"] and set(p["listed_gates"]) <= set(p["caught_by"])]


def _equation_rows(cat, paper: str, gates: dict[str, dict], perts: dict[str, dict], repo_root: Path) -> list[dict]:
    rows = []
    for eq in cat.equations_of(paper):
        d = eq.data
        covering = [g for g in gates.values() if eq.id in g["equations"]]
        accepted = [g["gate"] for g in covering if g["accepted"]]
        rows.append({"id": eq.id, "title": d["title"], "where": dict(d["where"]), "where_text": where_text(d["where"]),
                     "tier": d["tier"], "status": d["status"], "code": list(d.get("code", [])),
                     "gates": [g["gate"] for g in covering], "accepted_gates": accepted,
                     "accepted_by": _accepted_by(eq.id, perts),
                     "gates_accepted_by": sorted({p for g in covering if g["accepted"] for p in g["accepted_by"]},
                                                 key=perturbation_key),
                     "accepted": bool(accepted), "deltas": [dict(x) for x in d.get("deltas", [])],
                     "provenance": list(d.get("provenance", [])), "notes": " ".join((d.get("notes") or "").split()),
                     "defined_at": f"{display_path(eq.file, repo_root)}:{eq.line}"})
    return rows


def _claim_ledger(prov: dict, equations: list[dict], claims: list[dict], gates: dict[str, dict],
                  by_gate: dict[str, list[dict]], paper: str, gate_run: dict | None) -> dict:
    sources = Counter()
    verdicts: dict[str, Counter] = {}
    refuted: dict[str, list[str]] = {}
    for c in claims:
        f = c["source"].split(" ", 1)[0]
        sources[f] += 1
        verdicts.setdefault(f, Counter())[c["verdict"]] += 1
        if c["verdict"] == "refuted":
            refuted.setdefault(f, []).append(c["id"])
    measured = []
    for g in gates.values():
        if paper not in g["papers"] or not g["accepted"]:
            continue
        runs = [{"perturbation": e["perturbation"], "recorded_at": e["recorded_at"], "reading": e["reading"],
                 "versions": e["versions"]}
                for e in by_gate.get(g["gate"], []) if e["current"] and e["accepts"]]
        measured.append({"gate": g["gate"], "equations": [q for q in g["equations"] if q.split(".")[0] == paper]
                         or g["equations"], "runs": sorted(runs, key=lambda r: perturbation_key(r["perturbation"])),
                         "gate_run": g["run"]["status"] if g["run"] else None})
    measured_eqs = {e["id"] for e in equations if e["accepted"]}
    return {
        "sourced": {
            "paper": f"arXiv:{prov['arxiv']}{prov['version']}, read {prov['read_date']}",
            "read_where": prov["read_where"], "author_code": prov["author_code"],
            "tier_a": [{"id": e["id"], "provenance": e["provenance"]} for e in equations if e["tier"] == "a"],
            "claim_sources": [{"file": f, "claims": n, **{k: verdicts[f].get(k, 0) for k in
                                                         ("confirmed", "refuted", "unchecked", "error")},
                               "refuted_ids": refuted.get(f, [])}
                              for f, n in sorted(sources.items())],
        },
        "measured": measured,
        "gate_run": None if gate_run is None else {"environment": gate_run.get("environment", {}),
                                                   "returncode": gate_run.get("returncode")},
        "transcription": [{"id": e["id"], "title": e["title"], "status": e["status"],
                           "measured": e["id"] in measured_eqs}
                          for e in equations if e["tier"] == "b" and e["status"] in IMPLEMENTED],
        "ours": [{"id": e["id"], "title": e["title"], "status": e["status"], "measured": e["id"] in measured_eqs}
                 for e in equations if e["tier"] == "c" and e["status"] in IMPLEMENTED],
        "not_claimed": [{"id": e["id"], "title": e["title"], "tier": e["tier"], "why": first_sentence(e["notes"])}
                        for e in equations if e["status"] == "not-implemented"],
    }


def _paper(cat, item, *, gates, perts, by_gate, by_pert, claims, separations, gate_run, gates_note,
           repo_root) -> dict:
    paper = item.id
    prov = _provenance(item, repo_root)
    equations = _equation_rows(cat, paper, gates, perts, repo_root)
    mine = [p for p in perts.values() if p["paper"] == paper]
    my_claims = [c for c in claims if c["paper"] == paper]
    deltas = [{"equation": e["id"], "status": e["status"], **d} for e in equations for d in e["deltas"]]
    blind = [p for p in mine if p["status"] in ("survived", "red for another reason only", "skipped",
                                                "red, not green after") or p["listed_not_red"]]
    return {
        "id": paper, "provenance": prov, "equations": equations, "deltas": deltas,
        "deviates_without_delta": [e["id"] for e in equations if e["status"] == "deviates" and not e["deltas"]],
        "claims": my_claims,
        "perturbations": [p["id"] for p in mine],
        "red_to_green": [r for p in mine for r in _red_to_green(p, by_pert.get(p["id"], []))],
        "blind_spots": [{"perturbation": p["id"], "title": p["title"], "status": p["status"],
                         "caught_by": p["caught_by"], "listed_not_red": p["listed_not_red"],
                         "outcomes": p["outcomes"], "diff": p["diff"]} for p in blind],
        "not_observed": [{"perturbation": p["id"], "title": p["title"], "status": p["status"]}
                         for p in mine if p["status"] in ("not run", "stale")],
        "separations": [s for s in separations if paper in s["papers"]],
        "claim_ledger": _claim_ledger(prov, equations, my_claims, gates, by_gate, paper, gate_run),
        "subject_matrix": _subject_matrix(cat, paper, gates, gate_run, gates_note),
        "discovery": discovery.of_paper(cat, paper),
    }


def _summary(papers: list[dict], gates: dict[str, dict]) -> list[dict]:
    out = []
    for p in papers:
        status = Counter(e["status"] for e in p["equations"])
        verdict = Counter(c["verdict"] for c in p["claims"])
        mine = [g for g in gates.values() if p["id"] in g["papers"]]
        implemented = [e for e in p["equations"] if e["status"] in IMPLEMENTED]
        out.append({"paper": p["id"], "title": p["provenance"]["title"],
                    "equations": len(p["equations"]), "implemented": status.get("implemented", 0),
                    "deviates": status.get("deviates", 0), "not_implemented": status.get("not-implemented", 0),
                    "implemented_accepted": sum(1 for e in implemented if e["accepted"]),
                    "gates": len(mine), "gates_accepted": sum(1 for g in mine if g["accepted"]),
                    "claims_confirmed": verdict.get("confirmed", 0), "claims_refuted": verdict.get("refuted", 0),
                    "claims_unchecked": verdict.get("unchecked", 0) + verdict.get("error", 0),
                    "perturbations": len(p["perturbations"]), "blind_spots": len(p["blind_spots"]),
                    "weak": sum(1 for s in p["separations"] if s["weak"])})
    return out


# ---------------------------------------------------------------- entry point

def _mechanisms(repo_root: Path) -> tuple[dict, list[str]]:
    """(every mechanism known with the project's own, the names the project's configuration declares),
    imported only when a gate run's coverage table reads them: the registry imports torch (~1-2 s),
    which a ledger without a gate run does not need."""
    from fidelity import project
    from fidelity.mechanisms.registry import known_mechanisms, load_mechanism

    try:
        refs = tuple(project.load(repo_root).mechanisms or ())
    except project.ProjectError:
        refs = ()
    return known_mechanisms(refs), [load_mechanism(ref).name for ref in refs]


def gather(cat, *, repo_root: Path, reports_dir: Path, fixtures_dir: Path, gate_run: dict | None = None,
           gates_note: str = "not run: --no-gates", gates_dir: Path | None = None) -> dict:
    """The whole ledger as a JSON-safe dict (see the module docstring for the rules).

    `gates_dir`: the gate suite, for telling whether a discovery record is current (default: the
    project's at `repo_root`, else tests/gates)."""
    from fidelity.claims import check_claims
    from fidelity.evidence import paths, store

    repo_root, reports_dir, fixtures_dir = Path(repo_root), Path(reports_dir), Path(fixtures_dir)
    records = store.load_all(paths.evidence_root(reports_dir))
    entries = _evidence(cat, records, repo_root, reports_dir)
    diffs = _diffs(records, entries)
    by_gate, by_pert = group(entries, "gate"), group(entries, "perturbation")
    gates = _gates(cat, entries, by_gate, gate_run, repo_root)
    perts = _perturbations(cat, entries, by_pert, diffs, repo_root)
    claims = check_claims(cat)
    separations = _separations(cat, gates, fixtures_dir, repo_root)
    papers = [_paper(cat, item, gates=gates, perts=perts, by_gate=by_gate, by_pert=by_pert, claims=claims,
                     separations=separations, gate_run=gate_run, gates_note=gates_note, repo_root=repo_root)
              for item in cat.papers.values()]
    gate_info = None
    if gate_run is not None:
        gate_info = {"environment": gate_run.get("environment", {}), "returncode": gate_run.get("returncode"),
                     "collect_errors": len(gate_run.get("collect_errors", [])),
                     "subjects": gate_run.get("subjects", [])}
    ledger = {
        "schema": SCHEMA,
        "inputs": {"specs": [display_path(f, repo_root) for f in cat.files],
                   "evidence_dir": display_path(paths.evidence_root(reports_dir), repo_root),
                   "evidence_records": len(records),
                   "current_records": sum(1 for e in entries if e["current"]),
                   "fixtures_dir": display_path(fixtures_dir, repo_root),
                   "gates": gates_note, "gate_run": gate_info},
        "summary": _summary(papers, gates),
        "papers": papers,
        "gates": gates,
        "perturbations": perts,
        "outside_specs": [p["id"] for p in perts.values() if not p["in_specs"]],
        "evidence": entries,
        "separations": separations,
    }
    known, own = _mechanisms(repo_root) if gate_run is not None else ({}, [])
    ledger["coverage"] = coverage.gather(gates, mechanisms=known, own=own, gate_run=gate_run is not None)
    third = _third_party(cat, gate_run)
    if third is not None:  # only when the gate run holds third-party runs: the ledger is otherwise unchanged
        ledger["third_party"] = third
    ledger["discovery"] = discovery.gather(cat, repo_root=repo_root, reports_dir=reports_dir, gates_dir=gates_dir,
                                           third_party=None if third is None else [t["name"] for t in third])
    bench = performance.gather(reports_dir)
    if bench is not None:  # only when the project has benchmark figures: the ledger is otherwise unchanged
        ledger["performance"] = bench
    return ledger
