"""The ledger as a page: the gathered data (model.gather) laid out as blocks.

After the summary and the subjects come the findings about third-party subjects
(only when the gate run holds runs of someone else's packages; the blind spots
`fidelity discover --subject` recorded in such a package sit under its findings), then
"Blind spots in other subjects" for the recorded packages the third-party part does not
hold. Order per paper: provenance, equations, deltas, claims, subject matrix (with a
column per third-party package whose gates cover the paper), red to green, blind spots
(the perturbations'), blind spots found by discovery (per module the paper's equations
name: counts per operator and outcome, whether the record is current, and every blind
spot and undecided mutant with its witness and the spec's explanation or UNEXPLAINED),
weak gates, and the claim ledger in four parts (Sourced, Measured, Transcription, Not
claimed). After the papers: blind spots in recorded modules no paper names.
Observations and predictions sit in separate columns, and every red-to-green row says
which one it is.
"""
from __future__ import annotations

from fidelity.evidence.outcome import Outcome
from fidelity.report import performance, verdict
from fidelity.report.anchors import (claim_ref, eq_ref, evidence_id, finding_id, gate_ref, gate_short, mutant_id, mutant_ref,
                                     pert_ref, ref_id)
from fidelity.report.blocks import (Bullets, Code, CodeBlock, Document, Heading, Link, Long, Num, Para, Plot, Ref,
                                    Strong, Table, Tag, Target, anchor)
from fidelity.report.discovery import OUTCOMES as DISCOVERY_OUTCOMES
from fidelity.report.discovery import witness_text
from fidelity.report.model import CHOICE, ERROR, FINDING, NOT_PROVIDED, OBSERVED, OBSERVED_STALE, PREDICTED_ONLY, perturbation_key

DASH = "—"
# (plot, the mechanism whose fixtures it draws: shown only in a project that holds it, or None, caption)
PLOTS = (
    ("sinkhorn_error", "sinkhorn", "Sinkhorn (mHC Eq. 9): max |M(t) - limit| against iteration t = 1..t_max, for each "
                       "sinkhorn fixture, from the oracle's 60-digit trajectory against the fixture's exact limit; "
                       "float32 and float64 epsilon for scale."),
    ("composite_distance", "mhc_residual", "The composite H^T of fixture mhc.composite_perturbed: spectral distance to J/n "
                           "against T (oracle values), with the fixture's predictions for a composite taken once "
                           "(dashed: predictions, not observations)."),
    ("separation", None, "Separation margins: distance of each predicted wrong value from the right one, in units of "
                   "the gate's tolerance (log scale; under 10 is a weak gate)."),
)


# ---------------------------------------------------------------- formatting

def num(x, digits: int = 6) -> str:
    if x is None:
        return DASH
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}g}"


def yes_no(x) -> str:
    return DASH if x is None else ("yes" if x else "no")


def codes(items, empty=DASH) -> object:
    items = list(items)
    if not items:
        return empty
    out = []
    for i, it in enumerate(items):
        if i:
            out.append(", ")
        out.append(Code(it))
    return tuple(out)


_gate_short = gate_short


def joined(items, empty=DASH) -> object:
    """Inline items separated by commas."""
    out = []
    for i, it in enumerate(items):
        out += [", ", it] if i else [it]
    return tuple(out) if out else empty


def gate_codes(gates, empty=DASH):
    return joined([gate_ref(g) for g in gates], empty)


def eq_refs(eqs, empty=DASH):
    return joined([eq_ref(e) for e in eqs], empty)


def pert_refs(pids, empty=DASH):
    return joined([pert_ref(p) for p in pids], empty)


def reading(x, digits: int = 9):
    """A reading to 4 significant digits on the page, every digit (`digits`) on hover and in Markdown."""
    if not isinstance(x, float):
        return num(x, digits)
    return Num(num(x, 4), num(x, digits))


_OUTCOME_TAG = {o: (o.words, kind) for o, kind in ((Outcome.RED_BY_ASSERTION, "red"), (Outcome.RED_OTHER, "other"),
                                                 (Outcome.SURVIVED, "survived"), (Outcome.SKIPPED, "skipped"))}


def outcome_tag(outcome: str | None):
    if outcome is None:
        return DASH
    text, kind = _OUTCOME_TAG.get(outcome, (outcome, "other"))
    return Tag(text, kind)


def basis_tag(basis: str):
    return Tag(basis, {OBSERVED: "observed", OBSERVED_STALE: "stale", PREDICTED_ONLY: "predicted"}[basis])


# ---------------------------------------------------------------- top of the page

def newest_evidence(ledger: dict) -> str | None:
    """The newest `recorded_at` of the evidence records (ISO 8601 UTC strings sort as times)."""
    return max((e["recorded_at"] for e in ledger["evidence"] if e["recorded_at"]), default=None)


def _at_a_glance(doc: Document, ledger: dict) -> None:
    doc.add(*verdict.blocks(ledger))
    inp = ledger["inputs"]
    doc.add(Para(("Evidence from ", str(inp["evidence_records"]), " records (", str(inp["current_records"]),
                  " current), the newest recorded ", Strong(newest_evidence(ledger) or "never"),
                  ". No commit is named: no input of the ledger records one, and the checkout's own commit would "
                  "make the same evidence read differently after every commit.")))


def _deviations(doc: Document, ledger: dict) -> None:
    rows = []
    for p in ledger["papers"]:
        deltas = {d["equation"]: d for d in p["deltas"]}
        for e in p["equations"]:
            if e["status"] == "deviates":
                what = " ".join(deltas[e["id"]]["what"].split()) if e["id"] in deltas else "no delta stated"
                rows.append((Link(p["id"], "#" + ref_id("paper", p["id"])), eq_ref(e["id"], e["title"]),
                             e["title"], what))
    doc.add(Heading(3, "Deviations from the papers", "deviations"))
    if rows:
        doc.add(Table(("paper", "equation", "title", "what differs"), tuple(rows), "scroll-x"))
    else:
        doc.add(Para("No equation deviates from its paper."))


def _findings_by_gate(t: dict, outcomes: tuple[str, ...] = (FINDING, ERROR)) -> dict[str, list[dict]]:
    """{gate: [equations it found something about]} for one third-party subject, counting the failures of
    `outcomes` (findings and errors; or, apart, differences from our choices)."""
    out: dict[str, list[dict]] = {}
    for e in t["equations"]:
        for gate in sorted({f["gate"] for f in e["findings"] if f.get("outcome", FINDING) in outcomes}):
            out.setdefault(gate, []).append(e)
    return dict(sorted(out.items()))


def _third_party_glance(doc: Document, ledger: dict) -> None:
    third = ledger.get("third_party")
    if not third:
        return
    doc.add(Heading(3, "Third-party findings by failing gate", "third-party-glance"))
    items = []
    for t in third:
        by_gate = _findings_by_gate(t)
        if not by_gate:
            items.append((Link(t["name"], "#" + anchor("third-party", t["name"])), ": no finding"))
            continue
        gates = joined([(Ref(gate_short(g), finding_id(t["name"], g), g), f" ({len(eqs)})")
                        for g, eqs in by_gate.items()])
        items.append((Link(t["name"], "#" + anchor("third-party", t["name"])),
                      f": {len(by_gate)} gates failed on {len({e['equation'] for es in by_gate.values() for e in es})} "
                      "equations (equations per gate in brackets): ", gates))
    doc.add(Bullets(tuple(items)))


def _intro(doc: Document, ledger: dict) -> None:
    inp = ledger["inputs"]
    doc.add(Heading(1, "Ledger", "ledger"))
    _at_a_glance(doc, ledger)
    _summary(doc, ledger)
    _deviations(doc, ledger)
    _third_party_glance(doc, ledger)
    doc.add(Heading(2, "How to read this ledger", "how-to-read", collapsed=True))
    doc.add(Para(("What the specs claim, what was measured, and what only a transcription stands behind, paper by "
                  "paper. Generated by ", Code("fidelity report"), " from ", str(len(inp["specs"])), " spec files (",
                  codes(inp["specs"]), "), ", str(inp["evidence_records"]), " evidence records (",
                  str(inp["current_records"]), " current) under ", Code(inp["evidence_dir"]),
                  " and the fixtures in ", Code(inp["fixtures_dir"]),
                  ". The only times on this page are the evidence records' own.")))
    doc.add(Bullets((
        (Strong("OBSERVED"), ": a row taken from an evidence record, that is from a run (", Strong("OBSERVED, STALE"),
         ": the record no longer matches the gate, target, fixtures or edits it was taken with). ",
         Strong("PREDICTED ONLY"), ": a reading an oracle predicts for a perturbation that no current run has "
                                   "shown. A prediction is never shown as an observation."),
        (Strong("accepted"), ": a gate with current evidence of going red by its own assertion under a "
                             "perturbation, and green again without it."),
        (Strong("tier"), ": a = checked against author code; b = our transcription of the paper, no executable "
                         "reference; c = ours, a choice the paper does not make."),
        (Strong("weak gate"), ": a separation under 10 tolerances between the right value and a predicted wrong one."),
        (Strong("blind spot found by discovery"), ": a mutant ", Code("fidelity discover"), " made of the code that no "
         "gate turned red, and that a probe tells apart from the original (the witness). It is closed by a gate, or ",
         Strong("explained"), " beside its equation (", Code("equivalent:"), " or ", Code("out_of_scope:"),
         ", with the reason); any other is ", Strong("UNEXPLAINED"), ". ", Strong("undecided"), ": no gate turned "
         "it red and no probe reached the mutated lines; never counted as equivalent."),
    )))
    run = inp["gate_run"]
    if run is None:
        doc.add(Para(("Gate suite: ", Strong(inp["gates"]), " (the subject matrices below are empty; "
                      "gates are known only from evidence records).")))
    else:
        env = run["environment"]
        doc.add(Para(("Gate suite (for the subject matrices): ", inp["gates"], "; python ", str(env.get("python")),
                      ", torch ", str(env.get("torch")), ", fidelity ", str(env.get("fidelity")), ", ",
                      str(env.get("platform")), ", CUDA ", "available" if env.get("cuda") else "not available",
                      "; pytest exit ", str(run["returncode"]), ", ", str(run["collect_errors"]),
                      " collection errors.")))


def _summary(doc: Document, ledger: dict) -> None:
    rows = []
    for s in ledger["summary"]:
        found = verdict.discovery_counts(ledger, s["paper"])
        rows.append((Link(s["paper"], "#" + anchor("paper", s["paper"])), s["title"],
                     f"{s['implemented']} / {s['deviates']} / {s['not_implemented']}",
                     f"{s['implemented_accepted']} of {s['implemented'] + s['deviates']}",
                     f"{s['gates_accepted']} of {s['gates']}",
                     f"{s['claims_confirmed']} / {s['claims_refuted']} / {s['claims_unchecked']}",
                     str(s["perturbations"]), str(s["blind_spots"]),
                     f"{found['blind_spots']} ({found['unexplained']}) / {found['undecided']}", str(s["weak"])))
    doc.add(Heading(2, "Summary", "summary"))
    doc.add(Table(("paper", "title", "equations implemented / deviates / not implemented",
                   "implemented or deviating, covered by an accepted gate", "gates accepted",
                   "claims confirmed / refuted / unchecked", "perturbations", "perturbations no gate caught",
                   "discovered blind spots (unexplained) / undecided", "weak separations"), tuple(rows), "scroll-x"))


def _plots(doc: Document, ledger: dict) -> None:
    doc.add(Heading(2, "Plots", "plots", collapsed=True))
    held = {row["mechanism"] for row in ledger["coverage"]["rows"]}  # the project's own mechanisms
    for name, mechanism, caption in PLOTS:
        if mechanism is not None and mechanism not in held:
            continue  # another project's fixtures: not "not drawn" here, simply not this project's plot
        doc.add(Plot(name, caption))
        if name == "separation":
            _separations_not_drawn(doc, ledger)


def _separations_not_drawn(doc: Document, ledger: dict) -> None:
    """The separation plot draws computed separations only; the rest are named, not silently left out."""
    left_out = [r for r in ledger["separations"] if r["separation"] is None]
    if not left_out:
        return
    gates = sorted({g for r in left_out for g in ([r["gate"]] if r["gate"] else r["readers"])})
    doc.add(Para((Strong(f"Not in the separation plot: {len(left_out)} predictions"), " without a computed "
                  f"separation (no gate states its tolerance or records one), read by {len(gates)} gates: ",
                  gate_codes(gates, "no gate"), ". Each is in its paper's weak-gates table with the reason.")))


def _subjects(doc: Document, ledger: dict) -> None:
    run = ledger["inputs"]["gate_run"]
    if run is None or not run["subjects"]:
        return
    doc.add(Heading(2, "Subjects", "subjects"))
    doc.add(Table(("subject", "available here", "description"),
                  tuple((Code(s["name"]), "yes" if s.get("available") else f"no: {s.get('reason')}",
                         s.get("description", "")) for s in run["subjects"])))


def _coverage_cell(cell: dict):
    if not cell["applies"]:
        return "does not apply"
    if not cell["gates"]:
        return Tag("missing", "failed")
    accepted = len(cell["accepted"])
    text = f"{len(cell['gates'])} gate{'s' if len(cell['gates']) != 1 else ''}, {accepted} accepted"
    return Tag(text, "passed") if accepted == len(cell["gates"]) else Tag(text, "failed")


def _coverage(doc: Document, ledger: dict) -> None:
    table = ledger["coverage"]
    doc.add(Heading(2, "Coverage by gate class", "coverage", collapsed=True))
    if not table["available"]:
        doc.add(Para("Not shown: the gate suite was not run (--no-gates), so the gates' classes are unknown."))
        return
    doc.add(Para("Per mechanism, which classes of gate hold it, and whether each of those gates is accepted "
                 "(seen red by its own assertion under a perturbation and green after). A class is named in the "
                 "gate's marker, gate_class=."))
    doc.add(Bullets(tuple((Code(name), f": {promise}") for name, promise in table["classes"].items())))
    classes = tuple(table["classes"])
    doc.add(Table(("mechanism", *classes),
                  tuple((Code(r["mechanism"]), *(_coverage_cell(r["cells"][c]) for c in classes))
                        for r in table["rows"])))


def _how(f: dict) -> str:
    if f.get("kind") == "assertion":
        return "the gate's assertion"
    exc = (f.get("exc_type") or "an error").rsplit(".", 1)[-1]
    return f"raised {exc}"


def _readings_text(readings: dict):
    if not readings:
        return DASH
    return joined([(f"{k} = ", reading(v)) for k, v in sorted(readings.items())])


def _finding_rows(t: dict) -> list[tuple]:
    """One row per failing gate (a finding or an error), with the equations it found something about, its
    failed instances, and the first one's reading and message."""
    rows = []
    for gate, eqs in _findings_by_gate(t).items():
        fs = [f for e in eqs for f in e["findings"] if f["gate"] == gate and f.get("outcome", FINDING) != CHOICE]
        first = fs[0]
        instances = codes(sorted({f["instance"] for f in fs if f["instance"]}))
        rows.append((Target(finding_id(t["name"], gate), gate_ref(gate)), eq_refs([e["equation"] for e in eqs]),
                     instances, _how(first), _readings_text(first["readings"]), first["message"] or DASH))
    return rows


def _choice_rows(t: dict) -> list[tuple]:
    """One row per gate that failed only where it compares a choice of ours: the tier-c items, our values, and
    what the gate compared (the first instance's message)."""
    rows = []
    for gate, eqs in _findings_by_gate(t, (CHOICE,)).items():
        fs = [f for e in eqs for f in e["findings"] if f["gate"] == gate and f.get("outcome") == CHOICE]
        items = {c["id"]: c for f in fs for c in f.get("choices", [])}
        ours = joined([(Ref(i, eq_ref(i)), f" = {c['ours']}" if c["ours"] is not None else "")
                       for i, c in sorted(items.items())])
        instances = codes(sorted({f["instance"] for f in fs if f["instance"]}))
        rows.append((gate_ref(gate), ours, instances, fs[0]["message"] or DASH))
    return rows


def _third_party_choices(doc: Document, t: dict) -> None:
    rows = _choice_rows(t)
    if not rows:
        return
    doc.add(Para((Strong(f"Differs from our choice on {t['name']}"), ": these gates failed only where they compare "
                  "a value the paper does not state (a tier-c item: our choice, held against our own reference). "
                  "A package that chose otherwise has not departed from the paper; not a finding.")))
    doc.add(Table(("gate", "our choice (tier c)", "instances", "what the gate compared"), tuple(rows)))


def _third_party(doc: Document, ledger: dict) -> None:
    third = ledger.get("third_party")
    if third is None:
        return
    doc.add(Heading(2, "Findings about third-party subjects", "third-party"))
    doc.add(Para(("Someone else's implementation held to the same gates, each package in a gate run of its own on "
                  "that package alone (", Code("fidelity report --subject NAME"), "; the verdicts are those of ",
                  Code("fidelity check --subject NAME"), "). A ", Strong("finding"), " is a gate whose own assertion "
                  "failed on that package, an ", Strong("error"), " one where the package raised instead of "
                  "answering: either is about the package, never a failure of this project, and counts in no verdict "
                  "of ours (not in the summary, the acceptance of a gate, or any exit code).")))
    if not third:
        doc.add(Para("No third-party subject was run."))
        return
    doc.add(Table(("subject", "reference", "package versions", "available here", "gates run",
                   "equations passed", "with findings", "with errors", "differing from our choice", "not run"),
                  tuple((Link(t["name"], "#" + anchor("third-party", t["name"])), Code(t["reference"] or DASH),
                         ", ".join(f"{d} {v}" for d, v in t["versions"].items()) or DASH,
                         "yes" if t["available"] else f"no: {t['reason']}", str(t["gates"]), str(t["passed"]),
                         str(t["findings"]), str(t.get("errors", 0)), str(t.get("differs_from_our_choice", 0)),
                         str(t["not_run"])) for t in third)))
    for t in third:
        doc.add(Heading(3, f"Findings about {t['name']} (third party)", anchor("third-party", t["name"]),
                        collapsed=True))
        doc.add(Para((Code(t["name"]), ": " + (t["description"] or "no description") + ".")))
        if not t["available"]:
            doc.add(Para(("Not available where the gate suite ran: ", t["reason"] or "no reason given",
                          ". Every gate of it is not run; nothing is said about the package.")))
        rows = _finding_rows(t)
        if rows:
            doc.add(Para(f"{t['findings']} equations with findings about {t['name']}: one row per gate that "
                         "failed, with the equations and the instances it failed on; the reading (the number the "
                         "gate compared) and the message are the first failed instance's (every instance's are in "
                         "ledger.json)."))
            doc.add(Table(("gate", "equations", "failed instances", "failed by", "reading", "message"), tuple(rows)))
        elif t["available"]:
            doc.add(Para(f"No finding: every gate that ran on {t['name']} passed." if t["passed"] else
                         f"No finding, and no gate passed on {t['name']} either."))
        _third_party_choices(doc, t)
        by_reason: dict[str, list[str]] = {}
        for e in t["equations"]:
            if e["verdict"] == "not run":
                for r in e["not_run_reasons"] or ["no reason given"]:
                    by_reason.setdefault(r, []).append(e["equation"])
        if by_reason:
            doc.add(Para(Strong(f"Not run on {t['name']}: equations no gate could drive on it, by reason")))
            doc.add(Bullets(tuple((r, ": ", codes(eqs)) for r, eqs in sorted(by_reason.items()))))
        _third_party_discovered(doc, ledger, t["name"])


# ---------------------------------------------------------------- per paper

def _provenance(doc: Document, p: dict) -> None:
    prov = p["provenance"]
    ac = prov["author_code"]
    doc.add(Heading(3, "Provenance", anchor(p["id"], "provenance")))
    items = [
        ("arXiv: ", Link(f"{prov['arxiv']}{prov['version']}", prov["url"]), " ", Strong(prov["title"])),
        "Authors: " + "; ".join(prov["authors"]),
        *[f"Read {prov['read_date']} from: {w}" for w in prov["read_where"]],
        ("Author code: ", Strong(ac["status"]), (": " + " ".join(ac["where"].split())) if ac.get("where") else ""),
    ]
    if ac.get("differs"):
        items.append("Author code differs from the paper: " + " ".join(ac["differs"].split()))
    if prov["notes"]:
        items.append("Notes: " + prov["notes"])
    items.append(("Spec: ", Code(prov["defined_at"])))
    doc.add(Bullets(tuple(items)))


_STATUS_KIND = {"implemented": "passed", "deviates": "other", "not-implemented": "skipped"}


def _status_tag(status: str):
    return Tag(status, _STATUS_KIND.get(status, "other"))


def _accepted_cell(e: dict):
    if e["status"] == "not-implemented":
        return Tag("not claimed", "skipped")
    if not e["gates"]:
        return Tag("no gate", "failed")
    if e["accepted"] and e["accepted_by"]:
        return (Tag("accepted", "passed"), " by ", pert_refs(e["accepted_by"]))
    if e["accepted"]:  # its gates are accepted, but under perturbations of other equations: said as such
        return (Tag("gates accepted", "passed"), "; no perturbation of this equation (its gates went red under ",
                pert_refs(e.get("gates_accepted_by", ())), ")")
    return Tag("not accepted", "failed")


def _equations(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Equations", anchor(p["id"], "equations")))
    rows = tuple((Target(ref_id("eq", e["id"]), Code(e["id"])), e["title"], e["where_text"], e["tier"],
                  _status_tag(e["status"]), codes(e["code"]), gate_codes(e["gates"]), _accepted_cell(e))
                 for e in p["equations"])
    doc.add(Table(("id", "title", "location", "tier", "status", "code", "gates", "accepted"), rows))


def _deltas(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Deltas", anchor(p["id"], "deltas")))
    if p["deltas"]:
        doc.add(Table(("equation", "status", "what differs", "why"),
                      tuple((eq_ref(d["equation"]), _status_tag(d["status"]), " ".join(d["what"].split()),
                             " ".join(d["why"].split()))
                            for d in p["deltas"])))
    else:
        doc.add(Para("No deltas recorded."))
    if p["deviates_without_delta"]:
        doc.add(Para((Strong("Deviating without a stated delta: "), eq_refs(p["deviates_without_delta"]))))


def _perturbation_catalogue(doc: Document, p: dict, ledger: dict) -> None:
    doc.add(Heading(3, "Perturbations", anchor(p["id"], "perturbations"), collapsed=True))
    if not p["perturbations"]:
        doc.add(Para("No perturbations are defined for this paper."))
        return
    readings = {(e["perturbation"], e["gate"]): e["reading"] for e in ledger["evidence"] if e["current"]}
    rows = []
    for pid in p["perturbations"]:
        x = ledger["perturbations"][pid]
        caught = joined([(gate_ref(g), f" ({num(readings.get((pid, g)), 4)})") for g in x["caught_by"]], "none")
        predicted = joined([(gate_ref(r["gate"]), " = ", reading(r["reading"])) for r in x["predicted"]])
        rows.append((Target(ref_id("pert", pid), Code(pid)), x["title"], Code(x["target"]), eq_refs(x["covers"]),
                     Tag(x["status"], "passed" if x["status"] == "caught" else "failed"), caught, predicted))
    doc.add(Para(f"{len(rows)} perturbations: what each changes, the equations it breaks, the gates that caught "
                 "it (the reading they observed, in brackets) and the readings oracles predict."))
    doc.add(Table(("perturbation", "title", "target", "equations covered", "status", "caught by (reading)",
                   "predicted readings"), tuple(rows)))


def _gate_matrix(doc: Document, p: dict, ledger: dict) -> None:
    from fidelity.report import gatematrix

    grid = gatematrix.build(p, ledger)
    if grid is not None:
        doc.add(Heading(3, "Gates x perturbations", anchor(p["id"], "gate-matrix"), collapsed=True))
        doc.add(grid)


def _gate_catalogue(doc: Document, ledger: dict) -> None:
    gates = ledger["gates"]
    if not gates:
        return
    doc.add(Heading(2, "Gates", "gates", collapsed=True))
    doc.add(Para(f"{len(gates)} gates: the equations each holds, its class, whether it is accepted and by which "
                 "perturbations, and how it ran in the recorded gate suite."))
    rows = []
    for g, x in sorted(gates.items()):
        run = (x.get("run") or {}).get("status") or DASH
        rows.append((Target(ref_id("gate", g), Code(gate_short(g))), eq_refs(x["equations"]), x["gate_class"] or DASH,
                     Tag("accepted", "passed") if x["accepted"] else Tag("not accepted", "failed"),
                     pert_refs(x["accepted_by"]), run))
    doc.add(Table(("gate", "equations", "class", "accepted", "accepted by", "gate suite"), tuple(rows)))


def _claims(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Claims", anchor(p["id"], "claims"), collapsed=True))
    checked = [c for c in p["claims"] if c["verdict"] in ("confirmed", "refuted", "error")]
    unchecked = [c for c in p["claims"] if c["verdict"] == "unchecked"]
    if checked:
        doc.add(Table(("claim", "stated", "computed", "difference", "verdict", "source"),
                      tuple((Target(ref_id("claim", c["id"]), Code(c["id"])), c["stated"], reading(c["computed"], 6),
                             reading(c["difference"], 6),
                             Tag(c["verdict"], {"confirmed": "passed", "refuted": "failed"}.get(c["verdict"], "other")),
                             c["source"]) for c in checked)))
    else:
        doc.add(Para("No claim of this paper is checked by an oracle."))
    if unchecked:
        doc.add(Para((Strong(f"Unchecked ({len(unchecked)})"), ": no oracle computes these; they are listed, "
                                                               "never counted as confirmed.")))
        doc.add(Table(("claim", "stated", "why unchecked", "source"),
                      tuple((Target(ref_id("claim", c["id"]), Code(c["id"])), c["stated"],
                             " ".join((c["note"] or "").split()), c["source"])
                            for c in unchecked)))


def _cell(cell: dict):
    status = cell["status"]
    kind = {"passed": "passed", "failed": "failed", "not run": "skipped", "no gate": "other"}[status]
    gates = cell["passed"] + cell["failed"] + cell["not_run"]
    if status == "passed":
        extra = f" {cell['passed']} of {gates} gates"
    elif status == "failed":
        extra = f" {cell['failed']} of {gates} gates"
    else:
        return Tag(status, kind)
    if cell["not_run"]:
        extra += f", {cell['not_run']} not run"
    return (Tag(status, kind), extra)


def _third_party_cell(cell: dict):
    status = cell["status"]
    if status == NOT_PROVIDED:
        return DASH
    if status == "not run":
        return Tag(status, "skipped")
    failing = status in (FINDING, CHOICE)
    tag = Tag(status, "failed" if status == FINDING else "other" if status == CHOICE else "passed")
    gates = cell["passed"] + cell["failed"] + cell["not_run"]
    extra = f" {cell['failed'] if failing else cell['passed']} of {gates} gates"
    if failing and cell["passed"]:
        extra += f", {cell['passed']} passed"
    if cell["not_run"]:
        extra += f", {cell['not_run']} not run"
    return (tag, extra)


def third_party_header(name: str) -> str:
    return f"{name} (third party)"


def _subject_matrix(doc: Document, p: dict) -> None:
    m = p["subject_matrix"]
    doc.add(Heading(3, "Subject matrix", anchor(p["id"], "subjects")))
    if not m["subjects"]:
        doc.add(Para(("Equations x subjects: ", Strong(m["note"]), ".")))
        return
    doc.add(Para(("Equations x subjects, from ", m["note"], ". A cell counts the equation's gates: "
                  "passed when every instance that ran passed; instances skipped for a missing subject or device "
                  "are not run, never passed.")))
    third = m.get("third_party") or []
    if third:
        doc.add(Para((Strong("(third party)"), ": someone else's package, from a gate run of its own on that "
                      "package alone. A ", Strong("finding"), " there is about that package, never a failure of "
                      "ours (see ", Link("Findings about third-party subjects", "#third-party"), "); ", DASH,
                      ": no gate of this equation runs on it (it does not provide the mechanism).")))
    rows = tuple((eq_ref(r["equation"]), *[_cell(r["cells"][s]) for s in m["subjects"]],
                  *[_third_party_cell(r["third_party"][t]) for t in third]) for r in m["rows"])
    doc.add(Table(("equation", *m["subjects"], *[third_party_header(t) for t in third]), rows, css="matrix"))
    why = []
    for s in m["subjects"]:
        reasons = sorted({x for r in m["rows"] for x in r["cells"][s]["reasons"]})
        if reasons:
            why.append((Code(s), ": " + "; ".join(reasons)))
    for t in third:
        reasons = sorted({x for r in m["rows"] for x in r["third_party"][t]["reasons"]})
        if reasons:
            why.append((Code(t), " (third party): " + "; ".join(reasons)))
    if why:
        doc.add(Para(Strong("Why not run")))
        doc.add(Bullets(tuple(why)))


def observed_red_reading(r: dict):
    """A red gate's observed reading; one red by an assertion that compared no number says so (not a 0)."""
    if r["observed"] is None and r["outcome"] == Outcome.RED_BY_ASSERTION:
        return "none (the failing assertion compared no number)"
    return reading(r["observed"])


def _red_to_green(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Red to green", anchor(p["id"], "red-to-green"), collapsed=True))
    rows = p["red_to_green"]
    if not rows:
        doc.add(Para("No perturbation of this paper has evidence or a predicted reading. No run, no row."))
        return
    rows = sorted(rows, key=lambda r: (perturbation_key(r["perturbation"]), r["gate"]))
    doc.add(Table(("perturbation", "gate", "outcome", "observed red reading", "what the gate said",
                   "predicted reading", "green after", "when", "basis"),
                  tuple((Target(evidence_id(r["perturbation"], r["gate"]), (pert_ref(r["perturbation"], r["title"]),
                                                                            " " + r["title"])), gate_ref(r["gate"]),
                         outcome_tag(r["outcome"]),
                         observed_red_reading(r) if r["basis"] != PREDICTED_ONLY else DASH,
                         _what_the_gate_said(r), reading(r["predicted"]), yes_no(r["green_after"]), r["when"] or DASH,
                         basis_tag(r["basis"]))
                        for r in rows)))
    stale = [r for r in rows if r["basis"] == OBSERVED_STALE]
    if stale:
        doc.add(Bullets(tuple((pert_ref(r["perturbation"]), " x ", gate_ref(r["gate"]), " stale: " +
                               "; ".join(r["stale_reasons"])) for r in stale)))


def _what_the_gate_said(row: dict):
    """The failure message of the instance that went red, without its node id (the gate column names it)."""
    detail = row.get("detail") or ""
    if row["basis"] == PREDICTED_ONLY or not detail:
        return DASH
    if detail.startswith(row["gate"] + "[") and "]: " in detail:
        detail = detail.split("]: ", 1)[1]
    return Long(detail)


def _blind_spots(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Blind spots", anchor(p["id"], "blind-spots"), collapsed=bool(p["blind_spots"])))
    if not p["blind_spots"]:
        doc.add(Para("No perturbation with current evidence survived, and every listed gate went red."
                     if p["perturbations"] else "No perturbations are defined for this paper."))
    for b in p["blind_spots"]:
        if b["status"] != "caught":
            head = (pert_ref(b["perturbation"]), " ", b["title"], ": ", Tag(b["status"], "failed"),
                    " (no gate went red by its own assertion and green after)")
        else:
            head = (pert_ref(b["perturbation"]), " ", b["title"], ": caught by ", gate_codes(b["caught_by"]))
        doc.add(Para(head))
        lines = [(gate_ref(g), ": ", outcome_tag(o)) for g, o in b["outcomes"].items()]
        lines += [("listed as a gate that must go red, but did not: ", gate_ref(g))
                  for g in b["listed_not_red"]]
        if lines:
            doc.add(Bullets(tuple(lines)))
        if b["diff"]:
            doc.add(CodeBlock(b["diff"], "diff", summary=f"diff of {b['perturbation']}"))
    if p["not_observed"]:
        doc.add(Para(Strong("Not observed (no current evidence; neither caught nor a blind spot yet)")))
        doc.add(Bullets(tuple((pert_ref(n["perturbation"]), f" {n['title']}: {n['status']}")
                              for n in p["not_observed"])))


_DISCOVERY_TAG = {"killed": ("killed", "passed"), "error": ("error", "other"), "equivalent": ("equivalent", "skipped"),
                  "blind_spot": ("blind spot", "failed"), "undecided": ("undecided", "other")}
NO_DISCOVERY = ("no discovery run recorded (run ", Code("fidelity discover"), ")")


def discovery_tag(outcome: str):
    text, kind = _DISCOVERY_TAG.get(outcome, (outcome, "other"))
    return Tag(text, kind)


def _rediscover(e: dict) -> tuple:
    cmd = f"fidelity discover --module {e['module']}" + (f" --subject {e['subject']}" if e["subject"] else "")
    return Code(cmd)


def _record_state(e: dict) -> tuple:
    if e["current"] is True:
        return (Tag("current", "passed"), ": the module's source, the gates and the discovery code are as recorded")
    if e["current"] is False:
        return (Tag("STALE", "stale"), ": " + "; ".join(e["stale_reasons"]) + ". What it found still stands until "
                "a new run; refresh it with ", _rediscover(e))
    return (Tag("currency unknown", "other"), ": " + "; ".join(e["stale_reasons"]))


def _explanation_cell(m: dict):
    x = m["explanation"]
    if x is not None:
        return (Tag("explained", "passed"), f" ({x['kind']}, beside ", eq_ref(x["equation"]), "): " + x["reason"])
    if m["outcome"] == "blind_spot":
        return (Tag("UNEXPLAINED", "failed"), ": close it with a gate, or explain it beside its equation "
                                              "(equivalent: / out_of_scope: naming " + m["name"] + ")")
    return "not a blind spot yet: no probe reached it (never counted as equivalent)"


def _discovered_module(doc: Document, e: dict, level: int, anchor_id: str, *, ours: bool = True,
                       anchored: bool = True) -> None:
    """`anchored`: its mutants' rows carry their ids (False where the module is shown again, under a second
    paper naming it: there each mutant links to the row that carries it)."""
    doc.add(Heading(level, e["module"] + (f" ({e['subject']}, third party)" if e["subject"] else ""), anchor_id))
    lead = ["Record ", Code(e["record"]), ", recorded ", e["recorded_at"] or DASH]
    if e["target_file"]:
        lead += [", of ", Code(e["target_file"])]
    if ours:
        lead += ["; named by ", eq_refs(e["equations"], "no equation")]
    doc.add(Para(tuple(lead) + (". ",) + _record_state(e)))
    extra = sorted(o for row in e["counts"].values() for o in row if o not in DISCOVERY_OUTCOMES)
    outcomes = [*DISCOVERY_OUTCOMES, *dict.fromkeys(extra)]
    rows = [(Code(op), *[str(row.get(o, 0)) for o in outcomes], str(sum(row.values())))
            for op, row in e["counts"].items()]
    rows.append((Strong("total"), *[str(e["totals"].get(o, 0)) for o in outcomes], str(sum(e["totals"].values()))))
    doc.add(Table(("operator", *[_DISCOVERY_TAG.get(o, (o,))[0] for o in outcomes], "total"), tuple(rows)))
    dropped = {k: v for k, v in e["dropped"].items() if v}
    if dropped:
        doc.add(Para("Dropped before running (not counted): " + ", ".join(f"{v} {k.replace('_', ' ')}"
                                                                          for k, v in dropped.items()) + "."))
    if e["gates_set_aside"]:
        doc.add(Para(("Gates set aside (red before any mutant, so they cannot tell one apart): ",
                      gate_codes(e["gates_set_aside"]))))
    listed = [m for m in e["mutants"] if m["outcome"] in ("blind_spot", "undecided")]
    s = e["summary"]
    if not listed:
        doc.add(Para(f"No blind spot and nothing undecided among the {s['mutants']} mutants."))
        return
    if ours:
        doc.add(Para(f"{s['blind_spots']} blind spots ({s['explained']} explained, {s['unexplained']} unexplained) "
                     f"and {s['undecided']} undecided:"))
    else:
        doc.add(Para(f"{s['blind_spots']} blind spots and {s['undecided']} undecided in {e['subject']}'s code: "
                     "findings about that package, counted in no verdict of ours:"))
    head = ("mutant", "id", "line", "function", "operator", "description", "outcome", "witness")
    rows = []
    for m in sorted(listed, key=lambda m: (m["line"] or 0, m["name"])):
        name = (Target(mutant_id(m["name"], e["subject"]), Code(m["name"])) if anchored
                else mutant_ref(m["name"], e["subject"]))
        row = (name, Code(m["id"] or DASH), num(m["line"]), Code(m["function"]) if m["function"] else DASH,
               Code(m["operator"]), m["description"] or DASH, discovery_tag(m["outcome"]), witness_text(m))
        rows.append(row + ((_explanation_cell(m),) if ours else ()))
    doc.add(Table(head + (("explanation",) if ours else ()), tuple(rows)))


def _first_paper_naming(ledger: dict, module: dict) -> str | None:
    """The paper, in page order, under which a module several papers name is shown with its mutants' ids."""
    return next((q["id"] for q in ledger["papers"] if q["id"] in module["papers"]), None)


def _discovered(doc: Document, p: dict, ledger: dict) -> None:
    d = ledger["discovery"]
    doc.add(Heading(3, "Blind spots found by discovery", anchor(p["id"], "discovery"), collapsed=True))
    if d["error"]:
        doc.add(Para(("The discovery records cannot be used: ", d["error"])))
        return
    mods = p["discovery"]["modules"]
    if not mods:
        doc.add(Para(("No equation of this paper names code (", Code("code:"), "): there is no module of it to "
                      "mutate.")))
        return
    if not d["records"]:
        doc.add(Para(("Mutants of the code this paper's equations name (", codes(mods), "): ", *NO_DISCOVERY, ".")))
        return
    doc.add(Para(("Mutants ", Code("fidelity discover"), " made of the modules this paper's equations name (",
                  Code("code:"), "), from its records: each module's counts per operator and outcome, and every "
                  "blind spot and undecided mutant.")))
    missing = [m for m in mods if m not in d["modules"]]
    for m in mods:
        if m in d["modules"]:
            e = d["modules"][m]
            _discovered_module(doc, e, 4, anchor(p["id"], "discovery", m), anchored=p["id"] == _first_paper_naming(ledger, e))
    if missing:
        doc.add(Para(Strong("Not recorded")))
        doc.add(Bullets(tuple((Code(m), ": no discovery run recorded (run ", Code(f"fidelity discover --module {m}"),
                               ")") for m in missing)))


def _unclaimed(doc: Document, ledger: dict) -> None:
    d = ledger["discovery"]
    if d["error"] or not d["unclaimed"]:
        return
    doc.add(Heading(2, "Blind spots in modules no paper names", "discovery-unclaimed"))
    doc.add(Para(("Discovery records of modules of ours that no equation's ", Code("code:"), " names: no paper "
                  "claims this code, so no equation can explain its blind spots until one names it.")))
    for m in d["unclaimed"]:
        _discovered_module(doc, d["modules"][m], 3, anchor("discovery", m))


def _other_subjects(doc: Document, ledger: dict) -> None:
    d = ledger["discovery"]
    others = [o for o in d["other_subjects"] if not o["in_third_party"]]
    if d["error"] or not others:
        return
    doc.add(Heading(2, "Blind spots in other subjects", "discovery-other-subjects"))
    doc.add(Para(("Mutants of someone else's package (", Code("fidelity discover --subject NAME"), "): a blind spot "
                  "there is about that package, never a failure of this project, and counts in no verdict of ours.")))
    for o in others:
        doc.add(Heading(3, f"Blind spots in {o['subject']} (third party)", anchor("discovery", o["subject"])))
        for e in o["modules"]:
            _discovered_module(doc, e, 4, anchor("discovery", o["subject"], e["module"]), ours=False)


def _third_party_discovered(doc: Document, ledger: dict, name: str) -> None:
    for o in ledger["discovery"]["other_subjects"]:
        if o["subject"] == name and o["in_third_party"] and not ledger["discovery"]["error"]:
            doc.add(Para((Strong(f"Blind spots found in {name} by discovery"), " (", Code(f"fidelity discover "
                          f"--subject {name}"), "): about that package, counted in no verdict of ours.")))
            for e in o["modules"]:
                _discovered_module(doc, e, 4, anchor("third-party", name, "discovery", e["module"]), ours=False)


def _weak_gates(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Weak gates", anchor(p["id"], "weak-gates"), collapsed=True))
    rows = p["separations"]
    if not rows:
        doc.add(Para("No separation computed: no fixture of this paper has predictions and no gate records one."))
        return
    weak = [r for r in rows if r["weak"]]
    computed = [r for r in rows if r["separation"] is not None]
    doc.add(Para((f"{len(weak)} weak of {len(computed)} computed separations; {len(rows) - len(computed)} not "
                  "computed. Separation = relative distance of the predicted value from the expected one / the "
                  "gate's relative tolerance. It is taken from a gate that records it (a reading whose name "
                  "contains 'separation'), or computed where a gate that reads the fixture states its tolerance "
                  "(a reading named 'rtol'); a distance of 0 is weak under any tolerance. Nothing else is "
                  "guessed.")))

    def judged(r):
        if r["separation"] is None:
            return (Tag("not computed", "skipped"), ": " + r["why_not"])
        tag = Tag("WEAK", "failed") if r["weak"] else Tag("ok", "passed")
        if r["source"].startswith("distance 0"):
            return (tag, ": the prediction equals the expected value; this fixture cannot tell them apart")
        return (tag, " (" + r["source"] + ")")

    rows = sorted(rows, key=lambda r: (r["separation"] is None, r["fixture"] or "", r["prediction"], r["field"] or ""))
    doc.add(Table(("fixture", "prediction", "field", "relative distance", "gate (reading it)", "gate rtol",
                   "separation", "verdict"),
                  tuple((Code(r["fixture"]) if r["fixture"] else DASH,
                         (Code(r["prediction"]), (" " + r["description"]) if r.get("description") else ""),
                         r["field"] or DASH,
                         reading(r["relative_distance"], 6), gate_codes([r["gate"]] if r["gate"] else r["readers"]),
                         num(r["rtol"]), num(r["separation"], 4), judged(r)) for r in rows)))


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


def _claim_ledger(doc: Document, p: dict) -> None:
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


def _paper(doc: Document, p: dict, ledger: dict) -> None:
    doc.add(Heading(2, f"{p['provenance']['title']} ({p['id']})", anchor("paper", p["id"])))
    for part in (_provenance, _equations, _deltas):
        part(doc, p)
    _perturbation_catalogue(doc, p, ledger)
    _gate_matrix(doc, p, ledger)
    for part in (_claims, _subject_matrix, _red_to_green, _blind_spots):
        part(doc, p)
    _discovered(doc, p, ledger)
    for part in (_weak_gates, _claim_ledger):
        part(doc, p)


def _outside(doc: Document, ledger: dict) -> None:
    ids = ledger["outside_specs"]
    if not ids:
        return
    doc.add(Heading(2, "Evidence outside the specs", "outside-specs"))
    doc.add(Para("Evidence records of perturbations that no spec defines (from `fidelity perturb --file`, or "
                 "removed since). They are stale by definition and count for nothing."))
    rows = [e for e in ledger["evidence"] if e["perturbation"] in ids]
    doc.add(Table(("perturbation", "gate", "outcome", "observed reading", "when"),
                  tuple((Code(e["perturbation"]), Code(_gate_short(e["gate"])), outcome_tag(e["outcome"]),
                         num(e["reading"], 9),
                         e["recorded_at"] or DASH) for e in rows)))


def build(ledger: dict, *, plots: bool = True) -> Document:
    doc = Document("fidelity ledger")
    _intro(doc, ledger)
    if plots:
        _plots(doc, ledger)
    _subjects(doc, ledger)
    _coverage(doc, ledger)
    _gate_catalogue(doc, ledger)
    _third_party(doc, ledger)
    _other_subjects(doc, ledger)
    for p in ledger["papers"]:
        _paper(doc, p, ledger)
    _unclaimed(doc, ledger)
    _outside(doc, ledger)
    performance.section(doc, ledger)
    return doc
