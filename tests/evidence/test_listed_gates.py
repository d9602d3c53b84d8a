"""check refuses what the runner refuses (fidelity.evidence.listed_gates): a gate a perturbation lists
must be red under THAT perturbation by its own assertion, green after, with its clean runs, though another
perturbation accepts it; a gate name the suite does not have is an error; predictions name gates too."""
from __future__ import annotations

import pytest

from fidelity.evidence.listed_gates import refusals
from fidelity.evidence.outcome import Outcome
from fidelity.evidence.record import CLEAN_RUNS, EvidenceRecord
from fidelity.evidence.verdict import Judged

WEAK = "tests/gates/test_x.py::test_weak"
STRONG = "tests/gates/test_x.py::test_strong"


def _judged(perturbation, gate, outcome, *, green_after=True, clean_runs=CLEAN_RUNS, stale=(), listed=True):
    rec = EvidenceRecord(perturbation=perturbation, gate=gate, gate_file="tests/gates/test_x.py", target="m",
                         outcome=outcome, hashes={}, green_after=green_after, edits_sha256="e", clean_runs=clean_runs,
                         listed=listed)
    return Judged(rec, tuple(stale))


def _spec(*gates, predicted=()):
    return {"gates": list(gates), "predicted": [{"gate": g, "reading": 1.0} for g in predicted]}


def test_a_listed_gate_that_survived_its_perturbation_is_refused_though_another_perturbation_accepts_it():
    judged = [_judged("P1", WEAK, Outcome.SURVIVED), _judged("P1", STRONG, Outcome.RED_BY_ASSERTION),
              _judged("P3", WEAK, Outcome.RED_BY_ASSERTION), _judged("P3", STRONG, Outcome.RED_BY_ASSERTION)]
    (refused,) = refusals({"P1": _spec(WEAK, STRONG), "P3": _spec(STRONG)}, judged, {WEAK, STRONG})
    assert (refused.perturbation, refused.gate, refused.why, refused.evidence_current) == ("P1", WEAK, "survived", True)
    sentence = refused.sentence()
    assert sentence.startswith(f"perturbation P1 lists gate {WEAK}, whose current record under it reads survived")
    assert "`fidelity perturb P1` exits 1" in sentence and sentence.endswith("then run `fidelity perturb P1`")


@pytest.mark.parametrize("outcome, green_after, clean_runs, words", [
    (Outcome.RED_OTHER, True, CLEAN_RUNS, "red for another reason"),
    (Outcome.SKIPPED, True, CLEAN_RUNS, "skipped"),
    (Outcome.RED_BY_ASSERTION, False, CLEAN_RUNS, "red by assertion, not green after"),
    (Outcome.RED_BY_ASSERTION, None, CLEAN_RUNS, "red by assertion, green after not seen"),
    (Outcome.RED_BY_ASSERTION, True, 3, f"red by assertion, after 3 clean runs ({CLEAN_RUNS} needed)"),
])
def test_each_way_a_listed_gate_falls_short_is_named(outcome, green_after, clean_runs, words):
    judged = [_judged("P1", WEAK, outcome, green_after=green_after, clean_runs=clean_runs)]
    (refused,) = refusals({"P1": _spec(WEAK)}, judged, {WEAK})
    assert refused.why == words


def test_a_listed_gate_red_by_its_assertion_with_green_after_and_its_clean_runs_is_not_refused():
    assert refusals({"P1": _spec(WEAK)}, [_judged("P1", WEAK, Outcome.RED_BY_ASSERTION)], {WEAK}) == []


def test_a_listed_gate_with_a_stale_or_no_record_under_its_perturbation_asks_for_that_perturbation_run():
    judged = [_judged("P1", WEAK, Outcome.RED_BY_ASSERTION, stale=("gate file changed",)),
              _judged("P3", STRONG, Outcome.RED_BY_ASSERTION)]
    refused = refusals({"P1": _spec(WEAK, STRONG)}, judged, {WEAK, STRONG})
    assert [(r.gate, r.why, r.evidence_current) for r in refused] == [
        (WEAK, "no current record", False), (STRONG, "no current record", False)]
    assert refused[0].sentence().endswith("has no current record under it: run `fidelity perturb P1`")


def test_a_misspelled_listed_or_predicted_gate_is_an_error_naming_it():
    typo, predicted_typo = WEAK + "x", STRONG + "y"
    judged = [_judged("P2", WEAK, Outcome.RED_BY_ASSERTION)]
    refused = refusals({"P2": _spec(WEAK, typo, predicted=[predicted_typo])}, judged, {WEAK, STRONG})
    assert [(r.perturbation, r.gate, r.why) for r in refused] == [
        ("P2", typo, "unknown gate"), ("P2", predicted_typo, "unknown gate")]
    assert refused[0].sentence() == (f"perturbation P2 names gate {typo}, which the gate suite does not have "
                                     f"(`fidelity perturb P2` exits 2): correct the name in its spec")


def test_gate_names_are_not_judged_when_the_suite_could_not_be_collected():
    judged = [_judged("P2", WEAK, Outcome.RED_BY_ASSERTION)]
    assert refusals({"P2": _spec(WEAK, predicted=["no such gate"])}, judged, None) == []


def test_a_gate_refused_by_current_evidence_is_told_which_perturbations_to_run_after_changing_it():
    """`perturb --stale` re-runs nothing while the evidence is current, so check names every perturbation."""
    from fidelity.check.evidence_stage import what_to_run

    current = {"stale": [], "not_red": [{"perturbation": p} for p in ("P12", "P3", "P12")]}
    assert what_to_run(current).endswith("strengthen the gate (or correct the perturbation), then run "
                                         "`fidelity perturb P3 P12`")
    assert what_to_run({**current, "stale": [{"perturbation": "P4"}]}) == "run `fidelity perturb --stale`"
    assert what_to_run({"stale": [], "not_red": []}) == "run `fidelity perturb --stale`"


@pytest.mark.parametrize("outcome", [Outcome.SURVIVED, Outcome.RED_BY_ASSERTION])
def test_a_record_that_ran_as_a_covering_gate_before_the_spec_listed_it_asks_for_the_perturbation_run(outcome):
    """Issue 50: the record is current, but of a run in which the gate was not listed: it does not stand for the
    listed gate, whatever it read, so `perturb --stale` runs the perturbation again (evidence_current False)."""
    from fidelity.evidence.listed_gates import LISTED_SINCE

    (refused,) = refusals({"P1": _spec(WEAK)}, [_judged("P1", WEAK, outcome, listed=False)], {WEAK})
    assert (refused.perturbation, refused.gate, refused.why, refused.evidence_current) == ("P1", WEAK, LISTED_SINCE,
                                                                                           False)
    assert refused.sentence() == (f"perturbation P1 lists gate {WEAK}, whose record under it ran as a covering gate, "
                                  f"before the spec listed it: run `fidelity perturb P1` (or `fidelity perturb --stale`)")
