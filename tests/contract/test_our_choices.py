"""Issue 50: a package is never blamed for our choices. Where a gate's failing comparison is attributed only
to tier-c items (values the paper does not state), `check --subject` says "differs from our choice", naming
the item, its tier, our value and the package's, and counts no finding; `--strict` passes. A default the
paper does state stays a finding, and so does any difference for our own reference, which is held to our
choices. The ledger's third-party section and subject matrix say the same.

One run of both packages (choice_adapter.py): OTHER_EPS defaults to eps = 2**-23 (ours, attnres.eps, is tier c),
OTHER_CONVENTION to the l2 score (not the paper's Eq. 2)."""
from __future__ import annotations

import copy

import pytest

from fidelity.gaterun import conformance
from fidelity.gaterun.conformance import CHOICE
from fidelity.report import blocks, markdown
from fidelity.report.ledger.subject_matrix import subject_matrix
from fidelity.report.ledger.third_party import third_party as third_party_conformance
from fidelity.report.sections import third_party
from fidelity.spec.loader import load_catalogue

from subject_check import REPO, check_subjects

DEFAULT_EPS_GATE = "tests/gates/test_attnres_default_eps.py::test_depth_attention_without_eps_is_the_oracle_at_the_default_eps"


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    """One --strict run of both (OTHER_CONVENTION's finding makes it exit 1; each subject's `ok` is its own)."""
    reports = check_subjects(("choice_adapter:OTHER_EPS", "choice_adapter:OTHER_CONVENTION"), "--strict")
    assert reports["choice_adapter:OTHER_CONVENTION"]["ok"] is False  # --strict held it: its finding fails it
    return {"eps": reports["choice_adapter:OTHER_EPS"], "convention": reports["choice_adapter:OTHER_CONVENTION"]}


@pytest.fixture(scope="module")
def cat():
    return load_catalogue(REPO / "specs")


def _by_equation(conformance_report: dict) -> dict[str, dict]:
    return {v["equation"]: v for v in conformance_report["equations"]}


def test_another_default_eps_differs_from_our_choice_and_is_no_finding(runs):
    report = runs["eps"]
    verdicts = _by_equation(report["conformance"])
    assert report["ok"] is True, "--strict must not fail on a difference from our choice"
    assert verdicts["attnres.eps"]["verdict"] == CHOICE
    assert all(v["findings"] == [] for v in verdicts.values()), [v["equation"] for v in verdicts.values() if v["findings"]]
    assert report["conformance"]["failing_instances"]["findings"] == 0
    differs = verdicts["attnres.eps"]["differs_from_our_choice"]
    assert {d["gate"] for d in differs} == {DEFAULT_EPS_GATE}
    for d in differs:
        assert d["choices"] == [{"id": "attnres.eps", "tier": "c", "ours": "1e-6",
                                 "title": "Epsilon of the key RMSNorm (our choice)"}]
        assert "our default eps 1e-06 (attnres.eps), the subject's 1.1920928955078125e-07" in d["message"]


def test_the_same_difference_is_a_finding_where_the_paper_states_the_value(runs, cat):
    """The run's own gate rows judged against the spec with attnres.eps as a paper statement (tier b)."""
    stated = copy.deepcopy(cat)
    item = stated.equations["attnres.eps"]
    item.data["tier"] = "b"
    verdicts = {v["equation"]: v for v in conformance.equation_verdicts(stated, runs["eps"]["gates"], "other-eps")}
    assert verdicts["attnres.eps"]["verdict"] == "finding"
    assert {f["gate"] for f in verdicts["attnres.eps"]["findings"]} == {DEFAULT_EPS_GATE}


def test_our_own_reference_is_held_to_our_choice(runs, cat):
    verdicts = {v["equation"]: v for v in conformance.equation_verdicts(cat, runs["eps"]["gates"], "other-eps", own=True)}
    assert verdicts["attnres.eps"]["verdict"] == "finding"


def test_a_default_that_departs_from_the_papers_equation_stays_a_finding(runs):
    verdicts = _by_equation(runs["convention"]["conformance"])
    assert verdicts["attnres.eq2"]["verdict"] == "finding"
    assert DEFAULT_EPS_GATE in {f["gate"] for f in verdicts["attnres.eq2"]["findings"]}
    assert verdicts["attnres.eps"]["verdict"] != CHOICE, "the l2 default fails at our eps given: the paper's score"


def test_the_text_report_names_the_item_its_tier_and_both_values(runs):
    [line, compared, *_] = conformance.text_lines(_by_equation(runs["eps"]["conformance"])["attnres.eps"])[1:]
    assert "differs from our choice, tier c, not the paper's: attnres.eps = 1e-6" in line
    assert "the subject's 1.1920928955078125e-07" in compared


def test_the_ledger_shows_a_difference_from_our_choice_apart_from_findings(runs, cat):
    report = runs["eps"]
    gate_run = {"subjects": [], "third_party": [{"name": "other-eps", "reference": "choice_adapter:OTHER_EPS",
                                                 "gates": report["gates"]}]}
    [third] = third_party_conformance(cat, gate_run)
    assert (third["findings"], third["differs_from_our_choice"]) == (0, 1)
    [row] = [r for r in subject_matrix(cat, "attnres", {}, gate_run, "")["rows"] if r["equation"] == "attnres.eps"]
    assert row["third_party"]["other-eps"]["status"] == CHOICE
    doc = blocks.Document("ledger")
    third_party.section(doc, {"third_party": [third], "discovery": {"other_subjects": [], "error": None}})
    text = markdown.render(doc)
    assert "Differs from our choice on other-eps" in text and "No finding" in text
