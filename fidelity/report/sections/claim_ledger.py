"""A paper's Claim ledger in four parts: Sourced, Measured (by which gate, in which run),
Transcription, Not claimed.
"""
from __future__ import annotations

from fidelity.report.anchors import claim_ref, eq_ref, gate_ref, pert_ref
from fidelity.report.blocks import Bullets, Code, Document, Heading, Para, Strong, anchor
from fidelity.report.inline import DASH, eq_refs, joined, num


def _measured_runs(runs: list[dict]) -> list:
    """': red by assertion and green after under P1 (reading x), P2 (reading y), recorded T with torch V; ...':
    the runs of one record time and torch said once (they repeated per perturbation, 0.4 MB of the page)."""
    by_run: dict[tuple, list] = {}
    for r in runs:
        by_run.setdefault((r["recorded_at"], r["versions"].get("torch")), []).append(r)
    out: list = []
    for (when, torch), rs in by_run.items():
        out += ["; under " if out else ": red by assertion and green after under "]
        for i, r in enumerate(rs):
            out += [", " if i else "", pert_ref(r["perturbation"]), f" (reading {num(r['reading'], 9)})"]
        out.append(f", recorded {when} with torch {torch}")
    return out


def section(doc: Document, p: dict) -> None:
    cl = p["claim_ledger"]
    pid = p["id"]
    doc.add(Heading(3, "Claim ledger", anchor(pid, "claim-ledger"), collapsed=True))
    doc.add(Heading(4, "Sourced (an external document named)", anchor(pid, "sourced")))
    s = cl["sourced"]
    items = [("The paper: ", s["paper"], ", from: " + "; ".join(s["read_where"]))]
    ac = s["author_code"]
    items.append(("Author code: ", ac["status"], (": " + " ".join(ac["where"].split())) if ac.get("where") else ""))
    for a in s["tier_a"]:
        items.append(("Checked against author code (tier a): ", Code(a["id"]), " (" + "; ".join(a["provenance"]) + ")"))
    for c in s["claim_sources"]:
        items.append((f"{c['claims']} numbers stated in ", Code(c["file"]), f": {c['confirmed']} confirmed, "
                      f"{c['refuted']} refuted by the oracles, {c['unchecked']} unchecked"
                      + (f", {c['error']} with a missing oracle" if c["error"] else "")
                      + (" (refuted: " if c["refuted_ids"] else ""),
                      *((joined([claim_ref(i) for i in c["refuted_ids"]], DASH), ")") if c["refuted_ids"] else ())))
    doc.add(Bullets(tuple(items)))
    doc.add(Heading(4, "Measured (by which gate, in which run)", anchor(pid, "measured")))
    if cl["measured"]:
        items = []
        for m in cl["measured"]:
            gate_run = f"; gate suite: {m['gate_run']}" if m["gate_run"] else ""
            items.append((gate_ref(m["gate"]), " measures ", eq_refs(m["equations"]), *_measured_runs(m["runs"]),
                          gate_run))
        doc.add(Bullets(tuple(items)))
    else:
        doc.add(Para("Nothing: no gate of this paper is accepted (no current evidence of a gate going red by its "
                     "own assertion and green after)."))
    doc.add(Heading(4, "Transcription (tier b, no executable reference)", anchor(pid, "transcription")))
    tr = cl["transcription"]
    if tr:
        doc.add(Para(("Our reading of the paper's text, implemented; the oracle that checks it is a transcription "
                      "too. ", str(sum(1 for t in tr if t["measured"])), " of ", str(len(tr)),
                      " are covered by an accepted gate.")))
        doc.add(Bullets(tuple((eq_ref(t["id"]), f" {t['title']} ({t['status']}"
                               + ("; measured" if t["measured"] else "") + ")") for t in tr)))
    else:
        doc.add(Para("None."))
    if cl["ours"]:
        doc.add(Para(Strong("Ours (tier c): choices the paper does not make")))
        doc.add(Bullets(tuple((eq_ref(t["id"]), f" {t['title']} ({t['status']}"
                               + ("; measured" if t["measured"] else "") + ")") for t in cl["ours"])))
    doc.add(Heading(4, "Not claimed (status not-implemented)", anchor(pid, "not-claimed")))
    if cl["not_claimed"]:
        doc.add(Bullets(tuple((eq_ref(n["id"]), f" {n['title']}" + (f": {n['why']}" if n["why"] else ""))
                              for n in cl["not_claimed"])))
    else:
        doc.add(Para("None."))
