"""The verdict at the top of the ledger answers three questions apart (issue 52): is the implementation
faithful; which numbers in the papers are wrong (a refuted claim is a finding about the paper, never a
failure of the implementation, README "claims"); which gates separate a perturbation only weakly."""
from __future__ import annotations

from test_report_render import ledger_of

from fidelity.report import document, markdown


def _top(ledger: dict) -> list[str]:
    """The paragraphs between the page's title and its Summary, as Markdown lines."""
    text = markdown.render(document.build(ledger))
    top = text.split("# Ledger", 1)[1].split("## Summary", 1)[0]
    return [line for line in top.splitlines() if line.strip()]


def _all_accepted(ledger: dict) -> dict:
    """The toy's ledger with every implemented equation held by an accepted gate and no blind spot left,
    its refuted claim and its weak separation kept."""
    for s in ledger["summary"]:
        s["implemented_accepted"] = s["implemented"] + s["deviates"]
        s["blind_spots"] = 0
    for entry in ledger["discovery"]["modules"].values():
        entry["summary"].update(unexplained=0, undecided=0)
    return ledger


def test_refuted_numbers_and_weak_separations_do_not_make_the_implementation_unfaithful(toy):
    toy.standard_evidence()
    ledger = _all_accepted(ledger_of(toy))
    assert sum(s["claims_refuted"] for s in ledger["summary"]) == 1 and sum(s["weak"] for s in ledger["summary"]) == 2
    faithful, sources, weak = _top(ledger)[:3]
    assert faithful.startswith("**faithful** **Is the implementation faithful?** Yes, as far as checked"), faithful
    assert "refuted" not in faithful and "weak" not in faithful and "separation" not in faithful
    assert sources.startswith("**1 refuted** **Which numbers in the papers are wrong?** 1 of the 3 numbers the papers state is refuted"), sources
    assert "a finding about the paper, not a failure of the implementation" in sources
    assert "[toy: 1](#toy-claims)" in sources                                   # where to look
    assert weak.startswith("**2 weak** **Which perturbations do the fixtures tell apart only weakly?**"), weak
    assert "not a failure of the implementation" in weak and "[toy: 2](#toy-weak-gates)" in weak
    zero = [r for r in ledger["separations"] if r["weak"] and r["separation"] == 0]
    assert f", {len(zero)} of them 0." in weak and "cannot tell the perturbation apart at any tolerance" in weak


def test_what_the_implementation_lacks_is_said_in_its_own_answer(toy):
    toy.standard_evidence()
    ledger = ledger_of(toy)
    blind = sum(s["blind_spots"] for s in ledger["summary"])
    faithful = _top(ledger)[0]
    assert faithful.startswith("**not yet shown faithful** **Is the implementation faithful?** Not yet shown: ")
    assert blind == 2 and "2 of 5 perturbations are blind spots: no gate caught them" in faithful, faithful
    assert "refuted" not in faithful and "weak" not in faithful
