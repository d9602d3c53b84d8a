"""The gathered ledger: observations and predictions kept apart, acceptance as `fidelity check` sees it,
blind spots with their diffs, weak gates, the claim ledger's four parts, the subject matrix."""
from __future__ import annotations

import json

from ledger_toy import G_DOUBLE, G_HALF, G_INC, gate_run_record

from fidelity.check.evidence_stage import why_not_accepted, gate_acceptance
from fidelity.evidence import store
from fidelity.evidence.paths import evidence_root
from fidelity.report import model
from fidelity.report.ledger.terms import OBSERVED, OBSERVED_STALE, PREDICTED_ONLY


def gather(toy, gate_run=None, note="not run: --no-gates"):
    return model.gather(toy.catalogue(), repo_root=toy.root, reports_dir=toy.reports, fixtures_dir=toy.fixtures,
                        gate_run=gate_run, gates_note=note)


def rows_of(ledger, paper="toy"):
    return next(p for p in ledger["papers"] if p["id"] == paper)


def test_red_to_green_marks_every_row_observed_or_predicted_only(toy):
    toy.standard_evidence()
    ledger = gather(toy)
    rows = {(r["perturbation"], r["gate"]): r for r in rows_of(ledger)["red_to_green"]}

    p1 = rows[("P1", G_DOUBLE)]
    assert p1["basis"] == OBSERVED
    assert p1["observed"] == 0.5000001 and p1["predicted"] == 0.5       # both, in their own columns
    assert p1["green_after"] is True and p1["when"] == "2026-11-29T10:00:00Z"

    p3 = rows[("P3", G_HALF)]                                            # a prediction with no run behind it
    assert p3["basis"] == PREDICTED_ONLY
    assert p3["observed"] is None and p3["when"] is None and p3["green_after"] is None
    assert p3["predicted"] == 0.3333333333

    p4 = rows[("P4", G_DOUBLE)]                                          # edits changed since the run
    assert p4["basis"] == OBSERVED_STALE
    assert any("edits changed" in r for r in p4["stale_reasons"])

    p5 = rows[("P5", G_INC)]
    assert p5["outcome"] == "red_other" and p5["observed"] is None       # red for another reason: no reading

    for r in rows.values():                                              # never a prediction as an observation
        if r["basis"] == PREDICTED_ONLY:
            assert r["observed"] is None and r["outcome"] is None


def test_acceptance_agrees_with_the_check_stage(toy):
    toy.standard_evidence()
    ledger = gather(toy)
    check_gates, caught = gate_acceptance(toy.catalogue(), toy.reports, toy.root)
    for gate, row in check_gates.items():
        assert ledger["gates"][gate]["accepted"] == row["accepted"], gate
    assert ledger["gates"][G_DOUBLE]["accepted"] and ledger["gates"][G_DOUBLE]["accepted_by"] == ["P1"]
    assert not ledger["gates"][G_INC]["accepted"]
    for pid, gates in caught.items():
        assert ledger["perturbations"][pid]["caught_by"] == sorted(gates)
    eq1 = next(e for e in rows_of(ledger)["equations"] if e["id"] == "toy.eq1")
    assert eq1["accepted"] and eq1["accepted_by"] == ["P1"] and eq1["code"] == ["toyledger_subj.arith:double"]


def test_the_check_says_in_words_why_a_gate_is_not_accepted(toy):
    toy.standard_evidence()
    gates, _ = gate_acceptance(toy.catalogue(), toy.reports, toy.root)
    assert not gates[G_INC]["accepted"]
    assert why_not_accepted(gates[G_INC]) == ("never red by its own assertion with green after 10 clean runs in its "
                                              "current evidence (P2: survived, P5: red for another reason)")
    module = toy.root / "toyledger_subj" / "arith.py"
    module.write_text(module.read_text() + "\nEDITED = 1  # an edit: every record of the module goes stale\n")
    gates, _ = gate_acceptance(toy.catalogue(), toy.reports, toy.root)
    assert why_not_accepted(gates[G_INC]) == ("only stale evidence: P2: target source toyledger_subj.arith changed; "
                                      "P5: target source toyledger_subj.arith changed")
    assert why_not_accepted({"accepted": False, "by": [], "stale": [], "not_red": []}).startswith("never seen red")


def test_perturbation_statuses_and_blind_spots_keep_their_diffs(toy):
    toy.standard_evidence()
    ledger = gather(toy)
    status = {pid: p["status"] for pid, p in ledger["perturbations"].items()}
    assert status == {"P1": "caught", "P2": "survived", "P3": "not run", "P4": "stale",
                      "P5": "red for another reason only"}
    blind = {b["perturbation"]: b for b in rows_of(ledger)["blind_spots"]}
    assert set(blind) == {"P2", "P5"}
    assert "-    return x + 1\n+    return x + 1.0" in blind["P2"]["diff"]
    assert blind["P2"]["listed_not_red"] == [G_INC]
    not_observed = {n["perturbation"]: n["status"] for n in rows_of(ledger)["not_observed"]}
    assert not_observed == {"P3": "not run", "P4": "stale"}


def test_separations_are_computed_only_from_stated_tolerances(toy):
    toy.standard_evidence()
    seps = {(s["prediction"], s["gate"]): s for s in gather(toy)["separations"]}
    triple = seps[("toy.fx.triple", G_DOUBLE)]               # |3x - 2x| / 2x = 0.5, rtol 0.1 (recorded) -> 5
    assert abs(triple["relative_distance"] - 0.5) < 1e-15 and triple["rtol"] == 0.1
    assert abs(triple["separation"] - 5.0) < 1e-12 and triple["weak"] is True
    same = seps[("toy.fx.same", None)]                        # equal to the expected value: weak whatever the tolerance
    assert same["separation"] == 0.0 and same["weak"] is True


def test_separation_says_not_computed_without_a_tolerance(toy):
    toy.record("P1", G_DOUBLE, "red_by_assertion", reading=0.5, readings={"reading": 0.5})   # no rtol
    seps = [s for s in gather(toy)["separations"] if s["prediction"] == "toy.fx.triple"]
    assert len(seps) == 1 and seps[0]["separation"] is None and seps[0]["weak"] is None
    assert "rtol" in seps[0]["why_not"] and seps[0]["readers"] == [G_DOUBLE]


def test_without_evidence_nothing_is_observed(toy):
    ledger = gather(toy)
    assert ledger["inputs"]["evidence_records"] == 0
    assert all(r["basis"] == PREDICTED_ONLY for r in rows_of(ledger)["red_to_green"])
    assert {r["perturbation"] for r in rows_of(ledger)["red_to_green"]} == {"P1", "P3"}
    s = [x for x in ledger["separations"] if x["prediction"] == "toy.fx.triple"][0]
    assert s["separation"] is None and "no gate run or evidence record" in s["why_not"]


def test_claim_ledger_has_its_four_parts(toy):
    toy.standard_evidence()
    p = rows_of(gather(toy))
    cl = p["claim_ledger"]
    sourced = cl["sourced"]
    assert sourced["paper"] == "arXiv:2501.00001v2, read 2026-11-29"
    assert [a["id"] for a in sourced["tier_a"]] == ["toy.eq4"]
    by_file = {c["file"]: c for c in sourced["claim_sources"]}
    assert by_file["notes.txt"]["confirmed"] == 1 and by_file["notes.txt"]["refuted"] == 1
    assert by_file["other.txt"]["unchecked"] == 1
    assert [m["gate"] for m in cl["measured"]] == [G_DOUBLE]
    assert cl["measured"][0]["runs"][0]["perturbation"] == "P1"
    assert cl["measured"][0]["runs"][0]["recorded_at"] == "2026-11-29T10:00:00Z"
    assert [t["id"] for t in cl["transcription"]] == ["toy.eq1"] and cl["transcription"][0]["measured"]
    assert [t["id"] for t in cl["ours"]] == ["toy.eq3"]
    assert cl["not_claimed"] == [{"id": "toy.eq2", "title": "a variant we do not build", "tier": "b",
                                  "why": "Not built."}]


def test_claims_keep_both_numbers(toy):
    claims = {c["id"]: c for c in rows_of(gather(toy))["claims"]}
    assert claims["toy.claim.rms_ok"]["verdict"] == "confirmed"
    wrong = claims["toy.claim.rms_wrong"]
    assert wrong["verdict"] == "refuted" and wrong["stated"] == "27.12" and wrong["computed"].startswith("27.386")
    assert claims["toy.claim.unknowable"]["verdict"] == "unchecked"


def test_subject_matrix_from_a_recorded_gate_run(toy):
    ledger = gather(toy, gate_run=gate_run_record(), note="recorded run")
    m = rows_of(ledger)["subject_matrix"]
    assert m["subjects"] == ["torch", "triton"]
    cells = {r["equation"]: r["cells"] for r in m["rows"]}
    assert set(cells) == {"toy.eq1", "toy.eq3", "toy.eq4"}        # not-implemented toy.eq2 has no row
    assert cells["toy.eq1"]["torch"]["status"] == "passed"
    assert cells["toy.eq1"]["torch"]["reasons"] == ["no CUDA device"]
    assert cells["toy.eq3"]["torch"]["status"] == "failed"
    assert cells["toy.eq1"]["triton"]["status"] == "not run"
    assert cells["toy.eq1"]["triton"]["reasons"] == ["subject triton not run: triton is not installed"]
    assert cells["toy.eq4"]["torch"]["status"] == "no gate"


def test_no_gates_leaves_the_matrix_empty_and_says_why(toy):
    m = rows_of(gather(toy))["subject_matrix"]
    assert m == {"note": "not run: --no-gates", "subjects": [], "rows": []}


def test_the_ledger_is_strict_json_and_carries_no_clock(toy):
    toy.standard_evidence()
    text = json.dumps(gather(toy), sort_keys=True, allow_nan=False)
    times = {t for t in __import__("re").findall(r"20\d\d-\d\d-\d\dT[0-9:]+Z", text)}
    assert times == {"2026-11-29T10:00:00Z"}                      # only the evidence's own recorded_at


def test_evidence_of_a_perturbation_no_spec_defines_counts_for_nothing(toy):
    from ledger_toy import EDITS

    toy.record("P1", G_DOUBLE, "red_by_assertion", reading=0.5)
    rec = toy.record("P1", G_DOUBLE, "red_by_assertion", reading=0.5)
    rec.update(perturbation="P99", title="from a --file catalogue", edits=EDITS["P1"])
    store.write_record(evidence_root(toy.reports), rec)
    ledger = gather(toy)
    assert ledger["outside_specs"] == ["P99"]
    p99 = ledger["perturbations"]["P99"]
    assert p99["in_specs"] is False and p99["status"] == "stale" and p99["paper"] is None
    e = next(e for e in ledger["evidence"] if e["perturbation"] == "P99")
    assert e["stale_reasons"] == ["perturbation no longer in the specs"]
    assert ledger["gates"][G_DOUBLE]["accepted_by"] == ["P1"]
    from fidelity.report import document, markdown
    text = markdown.render(document.build(ledger))
    assert "## Evidence outside the specs" in text and "`P99`" in text


def test_a_record_from_too_few_clean_runs_accepts_nothing_and_says_so(toy):
    toy.standard_evidence()
    root = toy.reports / "evidence"
    for rec in store.load_all(root, ["P1"]):  # as the runner would have written them with its old baseline
        store.write_record(root, {**rec.json, "clean_runs": 2})
    gates, caught = gate_acceptance(toy.catalogue(), toy.reports, toy.root)
    assert not gates[G_DOUBLE]["accepted"] and caught["P1"] == []
    assert "P1: red by assertion, after 2 clean runs (10 needed)" in why_not_accepted(gates[G_DOUBLE])
    assert gather(toy)["perturbations"]["P1"]["status"] == "red, after too few clean runs"
