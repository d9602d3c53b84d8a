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

from collections import Counter
from pathlib import Path

from fidelity.report import coverage, discovery, performance
from fidelity.report.ledger.evidence_entries import diffs_by_perturbation, evidence_entries
from fidelity.report.ledger.gates import gate_rows
from fidelity.report.ledger.paper import paper_entry
from fidelity.report.ledger.perturbations import perturbation_rows
from fidelity.report.ledger.separations import separation_rows
from fidelity.report.ledger.terms import IMPLEMENTED, group
from fidelity.report.ledger.third_party import third_party
from fidelity.report.shown_paths import display_path

SCHEMA = "fidelity.report.ledger/1"


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
    from fidelity import cache
    from fidelity.claims import check_claims
    from fidelity.evidence import paths, read_memo, store

    repo_root, reports_dir, fixtures_dir = Path(repo_root), Path(reports_dir), Path(fixtures_dir)
    records = store.load_all(paths.evidence_root(reports_dir), memo=read_memo.folder(cache.cache_dir(repo_root)))
    entries = evidence_entries(cat, records, repo_root, reports_dir)
    diffs = diffs_by_perturbation(records, entries)
    by_gate, by_pert = group(entries, "gate"), group(entries, "perturbation")
    gates = gate_rows(cat, entries, by_gate, gate_run, repo_root)
    perts = perturbation_rows(cat, entries, by_pert, diffs, repo_root)
    claims = check_claims(cat)
    separations = separation_rows(cat, gates, fixtures_dir, repo_root)
    papers = [paper_entry(cat, item, gates=gates, perts=perts, by_gate=by_gate, by_pert=by_pert, claims=claims,
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
    third = third_party(cat, gate_run)
    if third is not None:  # only when the gate run holds third-party runs: the ledger is otherwise unchanged
        ledger["third_party"] = third
    ledger["discovery"] = discovery.gather(cat, repo_root=repo_root, reports_dir=reports_dir, gates_dir=gates_dir,
                                           third_party=None if third is None else [t["name"] for t in third])
    bench = performance.gather(reports_dir)
    if bench is not None:  # only when the project has benchmark figures: the ledger is otherwise unchanged
        ledger["performance"] = bench
    return ledger
