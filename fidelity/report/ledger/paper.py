"""One paper's entry in the ledger: its provenance, equation rows (accepted or not, and by which
perturbations), deltas, claims, red-to-green rows, blind spots, separations, claim ledger, subject
matrix and discovery.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from fidelity.report import discovery
from fidelity.report.ledger.perturbations import red_to_green
from fidelity.report.ledger.subject_matrix import subject_matrix
from fidelity.report.ledger.terms import IMPLEMENTED, first_sentence, perturbation_key, where_text
from fidelity.report.shown_paths import display_path


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


def paper_entry(cat, item, *, gates, perts, by_gate, by_pert, claims, separations, gate_run, gates_note,
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
        "red_to_green": [r for p in mine for r in red_to_green(p, by_pert.get(p["id"], []))],
        "blind_spots": [{"perturbation": p["id"], "title": p["title"], "status": p["status"],
                         "caught_by": p["caught_by"], "listed_not_red": p["listed_not_red"],
                         "outcomes": p["outcomes"], "diff": p["diff"]} for p in blind],
        "not_observed": [{"perturbation": p["id"], "title": p["title"], "status": p["status"]}
                         for p in mine if p["status"] in ("not run", "stale")],
        "separations": [s for s in separations if paper in s["papers"]],
        "claim_ledger": _claim_ledger(prov, equations, my_claims, gates, by_gate, paper, gate_run),
        "subject_matrix": subject_matrix(cat, paper, gates, gate_run, gates_note),
        "discovery": discovery.of_paper(cat, paper),
    }
