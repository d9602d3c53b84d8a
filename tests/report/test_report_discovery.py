"""Blind spots found by `fidelity discover` in the ledger: per paper, the modules its equations name, with
the record's counts per operator and outcome, whether the record is current, and every blind spot and
undecided mutant (an explained one with the spec's reason, any other marked UNEXPLAINED); modules no paper
names and other subjects' records in sections of their own; and every mutant of our code in the Stryker
report, with a status the schema allows."""
from __future__ import annotations

import html as html_lib
import json

import jsonschema
from ledger_toy import (DISC_KEYS, DISC_MODULE, DISCOVERED, EXPLAINED, G_DOUBLE, OUT_OF_SCOPE_REASON, SPEC,
                        UNEXPLAINED, gate_run_record)
from test_report_render import ledger_of, md_table
from test_report_stryker import MINIMAL_SCHEMA, index_of
from test_report_thirdparty import third_party_record

from fidelity.targets.patching import apply_edits
from fidelity.report import document, html, jsonreport, markdown, outputs, stryker

SECTION = "### Blind spots found by discovery"


def md(ledger) -> str:
    return markdown.render(document.build(ledger))


def section(text: str, start: str = SECTION, end: str = "\n### ") -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def name(mid: str) -> str:
    return f"{DISC_MODULE}:{DISC_KEYS[mid]}"


def test_without_records_the_section_says_no_discovery_run_was_recorded(toy):
    ledger = ledger_of(toy)
    assert ledger["discovery"]["records"] == 0 and ledger["discovery"]["modules"] == {}
    assert ledger["papers"][0]["discovery"] == {"modules": [DISC_MODULE]}
    part = section(md(ledger))
    assert "no discovery run recorded (run `fidelity discover`)" in part
    assert "Blind spots in other subjects" not in md(ledger) and "no paper names" not in md(ledger)


def test_the_model_puts_the_module_under_the_paper_with_counts_and_explanations(toy):
    toy.discovery_record()
    ledger = ledger_of(toy)
    d = ledger["discovery"]
    assert d["error"] is None and d["records"] == 1 and d["unclaimed"] == [] and d["other_subjects"] == []
    e = d["modules"][DISC_MODULE]
    assert e["current"] is True and e["stale_reasons"] == []
    assert e["papers"] == ["toy"] and e["equations"] == ["toy.eq1", "toy.eq3", "toy.eq4"]
    assert e["record"] == "reports/discovery/toyledger_subj.arith.json"
    assert e["counts"]["constant"] == {"killed": 1, "error": 1, "equivalent": 0, "blind_spot": 1, "undecided": 0}
    assert e["totals"] == {"killed": 1, "error": 1, "equivalent": 1, "blind_spot": 2, "undecided": 1}
    assert e["summary"] == {"mutants": 6, "blind_spots": 2, "explained": 1, "unexplained": 1, "undecided": 1}
    by = {m["name"]: m for m in e["mutants"]}
    assert by[EXPLAINED]["explanation"] == {"kind": "out_of_scope", "reason": OUT_OF_SCOPE_REASON,
                                            "equation": "toy.eq3", "paper": "toy",
                                            "where": f"specs/toy.yaml:{SPEC.splitlines().index('  - id: toy.eq3') + 1}"}
    assert by[UNEXPLAINED]["explanation"] is None
    assert by[UNEXPLAINED]["witness"] == {"input": "double(negative; n=4; seed 0)", "difference": 4.0, "error": None}
    assert by[name("m6")]["witness"] == "none of the 3 probes executed the mutated line(s) 10-10"
    assert by[name("m5")]["probes"] == 3
    json.loads(jsonreport.render(ledger))                               # strict JSON, in ledger.json
    assert str(toy.root) not in json.dumps(d)                            # paths relative to the root, like the rest


def test_markdown_lists_the_counts_the_state_and_every_blind_spot_and_undecided_mutant(toy):
    toy.discovery_record()
    part = section(md(ledger_of(toy)))
    assert "**current**" in part and "`reports/discovery/toyledger_subj.arith.json`" in part
    counts = md_table(part, "#### toyledger\\_subj.arith")
    assert counts[0] == ["operator", "killed", "error", "equivalent", "blind spot", "undecided", "total"]
    rows = {r[0]: r[1:] for r in counts[1:]}
    assert rows["`constant`"] == ["1", "1", "0", "1", "0", "3"]
    assert rows["**total**"] == ["1", "1", "1", "2", "1", "6"]
    assert "Dropped before running (not counted): 1 does not compile, 2 no change." in part

    listed = md_table(part, "2 blind spots (1 explained, 1 unexplained) and 1 undecided:")
    assert listed[0] == ["mutant", "id", "line", "function", "operator", "description", "outcome", "witness",
                         "explanation"]
    by = {r[0].strip("`"): dict(zip(listed[0], r)) for r in listed[1:]}
    assert set(by) == {UNEXPLAINED, EXPLAINED, name("m6")}               # not the killed, error, equivalent ones
    unexplained = by[UNEXPLAINED]
    assert (unexplained["line"], unexplained["function"], unexplained["operator"]) == ("2", "`double`", "`wrap_abs`")
    assert unexplained["description"] == "x -\\> abs(x)" and unexplained["outcome"] == "**blind spot**"
    assert unexplained["witness"] == "double(negative; n=4; seed 0): differs by 4"
    assert unexplained["explanation"].startswith("**UNEXPLAINED**")
    explained = by[EXPLAINED]
    assert explained["explanation"].startswith("**explained** (out\\_of\\_scope, beside `toy.eq3`): ")
    assert OUT_OF_SCOPE_REASON in explained["explanation"]
    assert by[name("m6")]["outcome"] == "**undecided**"
    assert by[name("m6")]["witness"] == "none of the 3 probes executed the mutated line(s) 10-10"


def test_html_has_the_section_the_reason_and_the_unexplained_mark(toy):
    toy.discovery_record()
    page = html.render(document.build(ledger_of(toy)), {}, None)
    assert 'id="toy-discovery"' in page and 'href="#toy-discovery"' in page
    assert html_lib.escape(OUT_OF_SCOPE_REASON) in page
    assert '<span class="tag failed">UNEXPLAINED</span>' in page
    assert '<span class="tag passed">explained</span>' in page and '<span class="tag passed">current</span>' in page


def test_a_stale_record_says_why_and_still_lists_what_it_found(toy):
    toy.discovery_record()
    toy.module.write_text("import math\n\n\n" + toy.module.read_text())   # every line moves down by 3
    ledger = ledger_of(toy)
    e = ledger["discovery"]["modules"][DISC_MODULE]
    assert e["current"] is False and e["stale_reasons"] == ["the source of toyledger_subj.arith changed"]
    part = section(md(ledger))
    assert "**STALE**: the source of toyledger\\_subj.arith changed" in part
    assert "`fidelity discover --module toyledger_subj.arith`" in part and UNEXPLAINED in part
    mutants = {m["id"]: m for m in stryker.build(ledger, toy.root)["files"]["toyledger_subj/arith.py"]["mutants"]}
    moved = mutants[UNEXPLAINED]                                           # the hunk is found where it went
    assert moved["location"]["start"]["line"] == 5 and "the record is stale" in moved["statusReason"]


def test_the_stryker_report_holds_every_discovered_mutant_with_its_status(toy):
    toy.standard_evidence()
    toy.discovery_record()
    ledger = ledger_of(toy)
    report = stryker.build(ledger, toy.root)
    jsonschema.Draft7Validator(MINIMAL_SCHEMA).validate(report)
    entry = report["files"]["toyledger_subj/arith.py"]
    mutants = {m["id"]: m for m in entry["mutants"]}
    assert len(mutants) == len(entry["mutants"]) == 5 + len(DISCOVERED)    # ids unique: P1..P5 and module:key
    assert mutants["P1"]["mutatorName"] == "P1: double triples"
    killed = mutants[name("m1")]
    assert killed["status"] == "Killed" and killed["killedBy"] == [G_DOUBLE] and killed["mutatorName"] == "constant"
    assert mutants[name("m4")]["status"] == "RuntimeError" and "TypeError" in mutants[name("m4")]["statusReason"]
    assert mutants[name("m5")]["status"] == "Ignored"
    assert mutants[name("m5")]["statusReason"].startswith("equivalent: 3 probes")
    assert mutants[UNEXPLAINED]["status"] == "Survived"
    assert "double(negative; n=4; seed 0): differs by 4" in mutants[UNEXPLAINED]["statusReason"]
    assert mutants[EXPLAINED]["status"] == "Ignored"          # judged beside its equation (issue 33)
    assert mutants[EXPLAINED]["statusReason"].startswith(f"explained (out_of_scope): {OUT_OF_SCOPE_REASON}")
    assert mutants[name("m6")]["status"] == "Survived"
    assert mutants[name("m6")]["statusReason"].startswith("undecided: none of the 3 probes")
    assert mutants[name("m6")]["replacement"] == "//"                       # a whole token, not an inserted `/`
    source = entry["source"]
    for mid, _op, _line, _fn, _desc, find, replace, *_ in DISCOVERED:
        m = mutants[name(mid)]
        start, end = index_of(source, m["location"]["start"]), index_of(source, m["location"]["end"])
        assert source[:start] + m["replacement"] + source[end:] == \
            apply_edits(source, [{"find": find, "replace": replace}], perturbation_id=mid, file="f"), mid
    assert G_DOUBLE in {t["id"] for t in report["testFiles"]["tests/gates/test_toy.py"]["tests"]}


def test_a_module_no_paper_names_has_a_section_of_its_own(toy):
    extra = toy.root / "toyledger_subj" / "extra.py"
    extra.write_text(toy.module.read_text())
    toy.discovery_record("toyledger_subj.extra", target_file="toyledger_subj/extra.py")
    ledger = ledger_of(toy)
    assert ledger["discovery"]["unclaimed"] == ["toyledger_subj.extra"]
    text = md(ledger)
    part = text.split("## Blind spots in modules no paper names", 1)[1]
    assert "### toyledger\\_subj.extra" in part and "toyledger_subj.extra:" + DISC_KEYS["m2"] in part
    assert "**UNEXPLAINED**" in part                                      # no equation explains anything here
    assert "no discovery run recorded (run `fidelity discover --module toyledger_subj.arith`)" in section(text)
    report = stryker.build(ledger, toy.root)
    assert {m["id"] for m in report["files"]["toyledger_subj/extra.py"]["mutants"]} == \
        {f"toyledger_subj.extra:{k}" for k in DISC_KEYS.values()}


def test_other_subjects_records_go_to_their_own_section_or_the_third_party_part(toy):
    toy.discovery_record("toy_tp_pkg.core", subject="toypkg", target_file="toy_tp_pkg/core.py")
    alone = ledger_of(toy)
    assert alone["discovery"]["modules"] == {} and alone["discovery"]["other_subjects"][0]["in_third_party"] is False
    text = md(alone)
    part = text.split("## Blind spots in other subjects", 1)[1].split("\n## ", 1)[0]
    assert "### Blind spots in toypkg (third party)" in part and "toy_tp_pkg.core:" + DISC_KEYS["m2"] in part
    assert "UNEXPLAINED" not in part and "counts in no verdict of ours" in part
    assert "no discovery run recorded (run `fidelity discover --module toyledger_subj.arith`)" in section(text)
    assert "toy_tp_pkg/core.py" not in stryker.build(alone, toy.root)["files"]   # findings about theirs, not ours

    with_tp = md(ledger_of(toy, third_party_record(), "recorded run"))
    assert "## Blind spots in other subjects" not in with_tp
    findings = with_tp.split("### Findings about toypkg (third party)", 1)[1].split("\n## ", 1)[0]
    assert "**Blind spots found in toypkg by discovery**" in findings and "toy_tp_pkg.core:" in findings
    assert "toy_tp_pkg.core:" not in with_tp.split("### Findings about absent (third party)", 1)[1].split("###")[0]


def test_a_corrupt_record_is_named_in_the_section_and_the_report_still_renders(toy):
    folder = toy.reports / "discovery"
    folder.mkdir(parents=True)
    (folder / "broken.json").write_text("{not json")
    ledger = ledger_of(toy)
    assert "broken.json" in ledger["discovery"]["error"]
    assert "The discovery records cannot be used: " in section(md(ledger))
    stryker.build(ledger, toy.root)


def test_the_same_records_give_the_same_bytes_and_check_passes(toy, tmp_path):
    toy.standard_evidence()
    toy.discovery_record()
    opts = outputs.Options(repo_root=toy.root, reports_dir=toy.reports, out_dir=tmp_path, fixtures_dir=toy.fixtures,
                           gates="none", html=False)
    first, _ = outputs.generate(toy.catalogue(), opts)
    second, _ = outputs.generate(toy.catalogue(), opts)
    assert first == second
    outputs.write(first, tmp_path)
    assert outputs.check(second, tmp_path) == []
    assert json.loads(first["mutation-report.json"])["files"]["toyledger_subj/arith.py"]["mutants"]


def test_a_third_party_perturbation_target_is_keyed_by_its_module_path(toy, monkeypatch):
    """Not by where it is installed (.venv/lib/python3.11/site-packages/...), which differs by machine."""
    site = toy.root / ".venv" / "lib" / "python3.11" / "site-packages"
    (site / "toy_tp_lib").mkdir(parents=True)
    (site / "toy_tp_lib" / "__init__.py").write_text("")
    (site / "toy_tp_lib" / "ops.py").write_text("def f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(site))
    ledger = ledger_of(toy, gate_run_record(), "r")
    ledger["perturbations"]["P9"] = {"id": "P9", "in_specs": True, "title": "f adds 2", "target": "toy_tp_lib.ops",
                                     "covers": [], "edits": [{"find": "x + 1", "replace": "x + 2"}]}
    report = stryker.build(ledger, toy.root)
    assert "toy_tp_lib/ops.py" in report["files"]
    assert not any(".venv" in f for f in report["files"])
    (p9,) = report["files"]["toy_tp_lib/ops.py"]["mutants"]
    assert p9["mutatorName"] == "P9: f adds 2" and p9["replacement"] == "x + 2"
    jsonschema.Draft7Validator(MINIMAL_SCHEMA).validate(report)


def test_the_summary_counts_what_discovery_found_beside_the_perturbations_no_gate_caught(toy):
    """Issue 33: the Summary's "blind spots 0" (perturbations) sat beside discovery's blind spots, unsaid."""
    toy.standard_evidence()
    toy.discovery_record()
    text = md(ledger_of(toy))
    header, *rows = md_table(text, "## Summary")
    found = {row[0]: row[header.index("discovered blind spots (unexplained) / undecided")] for row in rows}
    assert list(found.values()) == ["2 (1) / 1"], found          # as the paper's discovery section counts them
    assert "discovery left 1 blind spots unexplained and 1 mutants undecided" in text
