"""Issue 33: every kind of id the ledger gives a thing is a link where that thing is mentioned: claims had
114 ids and no link, mutants no id at all, 1,373 perturbations in the Measured lists were plain text. Read
from this project's committed ledger.html, which `fidelity report --check` keeps equal to what the
evidence renders."""
import json
import re
from pathlib import Path

import pytest

from fidelity.report.anchors import KINDS, claim_ref, mutant_id

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "reports" / "ledger.html"
LEDGER = REPO / "reports" / "ledger.json"


@pytest.fixture(scope="module")
def page() -> tuple[set[str], list[str], str]:
    text = PAGE.read_text(encoding="utf-8")
    return set(re.findall(r' id="([^"]+)"', text)), re.findall(r'href="#([^"]+)"', text), text


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_id_on_the_page_is_linked_from_a_mention(kind, page):
    ids, hrefs, _ = page
    own = {i for i in ids if i.startswith(kind + "-")}
    assert own, f"no {kind} id on the page"
    assert any(h in own for h in hrefs), f"{len(own)} {kind} ids and no link to any of them"


def test_every_refuted_claim_is_linked_from_its_sources_line(page):
    _, hrefs, _ = page
    refuted = [c["id"] for p in json.loads(LEDGER.read_text())["papers"] for c in p["claims"]
               if c["verdict"] == "refuted"]
    assert refuted and all(claim_ref(c).target in hrefs for c in refuted)


def test_a_mutant_shown_under_a_second_paper_links_to_its_row_under_the_first(page):
    ids, hrefs, _ = page
    discovery = json.loads(LEDGER.read_text())["discovery"]
    shared = [m["name"] for e in discovery["modules"].values() if len(e["papers"]) > 1
              for m in e["mutants"] if m["outcome"] in ("blind_spot", "undecided")]
    assert shared and all(mutant_id(n) in ids and mutant_id(n) in hrefs for n in shared)


def test_the_perturbations_in_the_measured_lists_are_links(page):
    _, _, text = page
    measured = re.findall(r"(<a [^>]*>|<code>)(?:<code>)?P\d+(?:</code>)?(?:</a>)? \(reading ", text)  # each run
    assert measured and all(m.startswith("<a ") for m in measured)
