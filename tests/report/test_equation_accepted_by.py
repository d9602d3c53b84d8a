"""Coverage says only what is true (issue 52, point 5). The Equations table listed mhc.eq4 as "accepted by
P1..P10", perturbations that cover other equations among them: it named every perturbation under which a
gate of the equation went red. An equation is accepted by the perturbations that cover it (`covers:`) and
whose listed gates all went red under them by current evidence; the rest is kept apart, as what it is.

The toy (ledger_toy.py) with its spec changed so that:
  P1  covers toy.eq1, lists test_double, red (current)                     -> accepts toy.eq1
  P4  covers nothing, lists test_double, red (current)                     -> not toy.eq1's: covers no equation
  P2  covers toy.eq1, lists test_inc, which survived                       -> its listed gate did not go red
  P3  covers toy.eq1, lists test_half, red only in a stale record          -> not current evidence
  P5  covers toy.eq1, lists test_double (red) and test_inc (red for another reason) -> not all listed went red
"""
from __future__ import annotations

from ledger_toy import EDITS, G_DOUBLE, G_HALF, G_INC

from fidelity.report import model


def _spec_changed(toy) -> None:
    """P2, P3 and P5 cover toy.eq1; P5 lists test_double beside test_inc."""
    spec = toy.specs / "toy.yaml"
    text = spec.read_text()
    for pid, gates in (("P2", [G_INC]), ("P3", [G_HALF]), ("P5", [G_DOUBLE, G_INC])):
        block = text.index(f"  - id: {pid}\n")
        line = text.index("    gates: ", block)
        end = text.index("\n", line) + 1
        listed = ", ".join(f'"{g}"' for g in gates)
        text = text[:line] + f"    gates: [{listed}]\n    covers: [toy.eq1]\n" + text[end:]
    spec.write_text(text)


def _ledger(toy) -> dict:
    _spec_changed(toy)
    toy.record("P1", G_DOUBLE, "red_by_assertion", reading=0.5)
    toy.record("P4", G_DOUBLE, "red_by_assertion", reading=0.75)
    toy.record("P2", G_INC, "survived")
    toy.record("P3", G_HALF, "red_by_assertion", edits=[{"find": "return x / 2", "replace": "return x / 4"}])
    toy.record("P5", G_DOUBLE, "red_by_assertion")
    toy.record("P5", G_INC, "red_other", detail="timeout after 120 s")
    return model.gather(toy.catalogue(), repo_root=toy.root, reports_dir=toy.reports, fixtures_dir=toy.fixtures)


def test_an_equation_is_accepted_by_the_perturbations_that_cover_it_and_whose_listed_gates_went_red(toy):
    ledger = _ledger(toy)
    assert ledger["perturbations"]["P3"]["status"] == "stale" and EDITS["P3"]  # the stale record is P3's only one
    eqs = {e["id"]: e for p in ledger["papers"] for e in p["equations"]}
    assert eqs["toy.eq1"]["accepted"] and eqs["toy.eq1"]["accepted_gates"] == [G_DOUBLE]
    assert eqs["toy.eq1"]["accepted_by"] == ["P1"]
    # what the old column said, kept under its own name: every perturbation its accepted gates went red under
    assert eqs["toy.eq1"]["gates_accepted_by"] == ["P1", "P4", "P5"]
    assert eqs["toy.eq3"]["accepted_by"] == [] and eqs["toy.eq4"]["accepted_by"] == []
