"""Third-party subjects in the ledger: `fidelity report --subject NAME` runs the gate suite on each
package alone, records the runs beside ours in gate-run.json, and the ledger shows a column per package
in the subject matrix and a section of findings about it; a recorded run renders the same without
running anything; findings change no exit code and nothing of ours; bad input is exit 2."""
from __future__ import annotations

import copy
import json
import textwrap

import pytest
from ledger_toy import G_DOUBLE, G_INC, gate_run_record
from test_report_render import ledger_of, md_table

from fidelity.report import document, gaterun, html, markdown

FAKE_SUBJECT = textwrap.dedent('''\
    """A toy third-party package: its `double` triples, and it refuses float64."""
    from fidelity.subjects.subject import Capability, NotRun, Subject


    def double(x, *, dtype="f32"):
        if dtype == "f64":
            raise NotRun("toypkg computes in float32 only")
        return 3 * x


    SUBJECT = Subject(name="toypkg", description="a toy package whose double triples",
                      mechanisms={"sinkhorn": double},
                      capabilities={"sinkhorn": Capability(("float32",), ("cpu",), ("autograd",))},
                      unavailable_reason=lambda: None, modules={"sinkhorn": ("toy_tp_subject",)})
    ''')

FAKE_GATES = textwrap.dedent('''\
    import pytest

    from fidelity.gates import readings
    from fidelity.subjects.registry import subjects_for
    from fidelity.subjects.subject import NotRun


    def _subjects():
        return [pytest.param(s, id=f"{s.name}-cpu", marks=pytest.mark.gate_subject(s.name, "cpu"))
                for s in subjects_for("sinkhorn")]


    @pytest.mark.gate(equations=["toy.eq1"])
    @pytest.mark.parametrize("subject", _subjects())
    def test_double(subject):
        y = subject.get("sinkhorn")(2.0)
        rel = readings.record(abs(y - 4.0) / 4.0)
        assert rel <= 1e-12, f"double(2): got {y}, expected 4. reading={rel}"


    @pytest.mark.gate(equations=["toy.eq3"])
    @pytest.mark.parametrize("subject", _subjects())
    def test_inc_in_f64(subject):
        try:                                   # as tests/gates/conftest.py turns NotRun into "not run"
            subject.get("sinkhorn")(1.0, dtype="f64")
        except NotRun as exc:
            pytest.skip(f"not run: {exc}")


    @pytest.mark.gate(equations=["toy.eq4"])
    def test_without_a_subject():
        assert 1 == 2, "a gate of ours with no subject: never a finding about the package"
    ''')


def _cli(argv: list[str]) -> int:
    """`fidelity report ...` as a user runs it, on the project found from the working directory."""
    from fidelity.cli import main

    return main(["report", *argv])


def _tp_row(gate, eqs, name, status, *, passed=0, failed=(), not_run=0, reasons=()):
    return {"gate": gate, "status": status, "equations": eqs, "instances": passed + len(failed) + not_run,
            "subjects": {name: {"status": status, "passed": passed, "failed": len(failed), "not_run": not_run,
                                "not_run_reasons": list(reasons)}},
            "failed": list(failed)}


def third_party_record() -> dict:
    """gate_run_record() with two third-party runs: `toypkg` (a finding on toy.eq1, toy.eq3 not run) and
    `absent` (not installed: every instance skipped with the reason)."""
    record = gate_run_record()
    finding = {"nodeid": G_DOUBLE + "[toypkg-cpu-f32]", "kind": "assertion",
               "exc_type": "fidelity.gates.compare.GateFailure", "readings": {"reading": 0.5},
               "message": "y = 2 x: got 6.0, expected 4.0, relative 0.5. reading=0.5"}
    record["third_party"] = [
        {"name": "absent", "reference": "absent_pkg.subject:SUBJECT", "description": "a package not installed here",
         "available": False, "reason": "package absent not installed", "versions": {}, "returncode": 0,
         "collect_errors": [],
         "gates": [_tp_row(G_DOUBLE, ["toy.eq1"], "absent", "not run", not_run=2,
                           reasons=["Skipped: subject absent not run: package absent not installed"])]},
        {"name": "toypkg", "reference": "toy_pkg.subject:SUBJECT", "description": "a toy package",
         "available": True, "reason": None, "versions": {"toy-pkg": "1.2"}, "returncode": 1, "collect_errors": [],
         "gates": [_tp_row(G_DOUBLE, ["toy.eq1"], "toypkg", "failed", passed=1, failed=[finding]),
                   _tp_row(G_INC, ["toy.eq3"], "toypkg", "not run", not_run=2,
                           reasons=["Skipped: not run: toypkg computes in float32 only"])]},
    ]
    return record


def test_a_finding_and_a_not_run_of_a_package_show_in_the_matrix_and_the_findings(toy):
    text = markdown.render(document.build(ledger_of(toy, third_party_record(), "recorded run")))
    matrix = md_table(text, "### Subject matrix")
    assert matrix[0] == ["equation", "torch", "triton", "absent (third party)", "toypkg (third party)"]
    rows = {r[0]: dict(zip(matrix[0], r)) for r in matrix[1:]}
    assert rows["`toy.eq1`"]["toypkg (third party)"] == "**finding** 1 of 1 gates"
    assert rows["`toy.eq3`"]["toypkg (third party)"] == "**not run**"
    assert rows["`toy.eq4`"]["toypkg (third party)"] == "—"                 # no gate of toy.eq4 runs on it
    assert rows["`toy.eq1`"]["absent (third party)"] == "**not run**"
    assert rows["`toy.eq1`"]["torch"].startswith("**passed**")             # ours, unchanged
    assert "- `toypkg` (third party): toypkg computes in float32 only" in text
    assert "- `absent` (third party): subject absent not run: package absent not installed" in text

    section = text.split("## Findings about third-party subjects", 1)[1].split("\n## ", 1)[0]
    assert "never a failure of this project" in section
    summary = {r[0]: r for r in md_table(section, "counts in no verdict")[1:]}
    assert summary["[toypkg](#third-party-toypkg)"][2:] == ["toy-pkg 1.2", "yes", "2", "0", "1", "0", "0", "1"]  # passed, findings, errors, differing from our choice, not run
    assert summary["[absent](#third-party-absent)"][3] == "no: package absent not installed"
    findings = md_table(section, "### Findings about toypkg (third party)")
    assert findings[0] == ["gate", "equations", "failed instances", "failed by", "reading", "message"]  # by gate
    assert findings[1:] == [["`test_toy.py::test_double`", "`toy.eq1`", "`toypkg-cpu-f32`", "the gate's assertion",
                             "reading = 0.5", "y = 2 x: got 6.0, expected 4.0, relative 0.5. reading=0.5"]]
    assert "- toypkg computes in float32 only: `toy.eq3`" in section       # not run, with its reason
    absent = section.split("### Findings about absent (third party)", 1)[1].split("###", 1)[0]
    assert "Not available where the gate suite ran: package absent not installed" in absent
    assert "- subject absent not run: package absent not installed: `toy.eq1`" in absent


def test_findings_count_in_nothing_of_ours_and_change_no_exit_code(toy, tmp_path, monkeypatch):
    plain, with_tp = ledger_of(toy, gate_run_record(), "r"), ledger_of(toy, third_party_record(), "r")
    assert "third_party" not in plain and "third_party" not in plain["papers"][0]["subject_matrix"]
    assert [t["name"] for t in with_tp["third_party"]] == ["absent", "toypkg"]
    toypkg = with_tp["third_party"][1]
    assert (toypkg["passed"], toypkg["findings"], toypkg["not_run"]) == (0, 1, 1)
    eq1 = next(e for e in toypkg["equations"] if e["equation"] == "toy.eq1")
    assert eq1["verdict"] == "finding" and eq1["findings"][0]["readings"] == {"reading": 0.5}
    for key in ("summary", "gates", "perturbations", "evidence", "separations", "inputs"):
        assert with_tp[key] == plain[key], key
    m_plain, m_tp = plain["papers"][0]["subject_matrix"], with_tp["papers"][0]["subject_matrix"]
    assert [r["cells"] for r in m_tp["rows"]] == [r["cells"] for r in m_plain["rows"]]
    assert "Findings about third-party" not in markdown.render(document.build(plain))

    monkeypatch.chdir(toy.root)  # the toy is the project
    common, out = toy.report_args(tmp_path, third_party_record())
    assert _cli(common) == 0                                                # a finding is not red
    assert "**finding** 1 of 1 gates" in (out / "LEDGER.md").read_text()
    assert _cli([*common, "--check"]) == 0


def test_html_links_the_matrix_to_the_findings(toy):
    page = html.render(document.build(ledger_of(toy, third_party_record(), "r")), {}, None)
    assert 'id="third-party"' in page and 'id="third-party-toypkg"' in page
    assert 'href="#third-party"' in page and 'href="#third-party-toypkg"' in page
    assert '<span class="tag failed">finding</span>' in page


def test_report_subject_runs_the_package_alone_and_a_recorded_run_renders_the_same(toy, tmp_path, monkeypatch,
                                                                                   capsys):
    """A real child gate run on a fake package (our own suite is stubbed): only the package's instances are
    kept, the finding carries its reading, and --check --gates-from on the record gives the same bytes."""
    (toy.root / "toy_tp_subject.py").write_text(FAKE_SUBJECT)
    (toy.root / "tests" / "gates" / "test_toy_tp.py").write_text(FAKE_GATES)
    monkeypatch.syspath_prepend(str(toy.root))
    monkeypatch.chdir(toy.root)  # the toy is the project
    monkeypatch.setattr(gaterun, "run", lambda root, fixtures, say: copy.deepcopy(gate_run_record()))
    out = tmp_path / "out"
    common = ["--specs", str(toy.specs), "--reports", str(toy.reports), "--out", str(out),
              "--fixtures", str(toy.fixtures), "--no-html"]
    assert _cli([*common, "--subject", "toy_tp_subject:SUBJECT"]) == 0
    err = capsys.readouterr().err
    assert "running the gate suite on toypkg alone (toy_tp_subject:SUBJECT)" in err
    assert "toypkg: 2 gates ran it: 0 passed, 1 with findings" in err

    record = json.loads((out / "gate-run.json").read_text())
    assert record["schema"] == gaterun.SCHEMA and [g["gate"] for g in record["gates"]] == [G_DOUBLE, G_INC]
    (tp,) = record["third_party"]
    assert (tp["name"], tp["reference"], tp["available"], tp["returncode"]) == \
        ("toypkg", "toy_tp_subject:SUBJECT", True, 1)
    rows = {r["gate"].split("::")[1]: r for r in tp["gates"]}
    assert set(rows) == {"test_double", "test_inc_in_f64"}                   # not ours, not subject-less
    assert all(set(r["subjects"]) == {"toypkg"} for r in rows.values())
    (finding,) = rows["test_double"]["failed"]
    assert finding["nodeid"].endswith("test_double[toypkg-cpu]") and finding["kind"] == "assertion"
    assert finding["readings"] == {"reading": 0.5} and finding["message"].startswith("double(2): got 6.0")
    assert rows["test_inc_in_f64"]["subjects"]["toypkg"]["not_run_reasons"] == [
        "Skipped: not run: toypkg computes in float32 only"]

    text = (out / "LEDGER.md").read_text()
    matrix = {r[0]: r for r in md_table(text, "### Subject matrix")}
    assert matrix["equation"][-1] == "toypkg (third party)"
    assert matrix["`toy.eq1`"][-1] == "**finding** 1 of 1 gates" and matrix["`toy.eq3`"][-1] == "**not run**"
    assert "| `test_toy_tp.py::test_double` | `toy.eq1` | `toypkg-cpu` | the gate's assertion | reading = 0.5 |" in text

    assert _cli([*common, "--check", "--gates-from", str(out / "gate-run.json")]) == 0


@pytest.mark.parametrize("argv, message", [
    (["--subject", "no-such-package"], "no subject named 'no-such-package'; third-party subjects known here: "),
    (["--subject", "torch"], "'torch' is one of our own subjects"),
    (["--subject", "no_such_module_for_fidelity:SUBJECT"], "does not import"),
    (["--subject", "pot", "--no-gates"], "cannot be combined with --no-gates"),
    (["--subject", "pot", "--gates-from", "reports/gate-run.json"], "cannot be combined with --gates-from"),
])
def test_bad_subject_input_is_exit_2_and_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert _cli([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fidelity report: error: ") and message in err
    if "no-such-package" in argv:
        assert "pot" in err and "hyper-connections" in err and "attn-res" in err
    assert not out.exists()


def test_a_package_that_raises_is_an_error_in_the_ledger_not_a_finding(toy):
    record = third_party_record()
    toypkg = record["third_party"][1]
    raised = {"nodeid": G_INC + "[toypkg-cpu-f32]", "kind": "other", "exc_type": "ValueError", "readings": {},
              "phase": "call", "raised_in": "toy_pkg/ops.py:12", "message": "ValueError: n must be at most 4"}
    toypkg["gates"][1] = _tp_row(G_INC, ["toy.eq3"], "toypkg", "failed", failed=[raised])
    ledger = ledger_of(toy, record, "recorded run")
    tp = next(t for t in ledger["third_party"] if t["name"] == "toypkg")
    assert (tp["findings"], tp["errors"]) == (1, 1)
    eq3 = next(e for e in tp["equations"] if e["equation"] == "toy.eq3")
    assert eq3["verdict"] == "error" and [f["outcome"] for f in eq3["findings"]] == ["error"]
    text = markdown.render(document.build(ledger))
    rows = md_table(text, "### Findings about toypkg (third party)")
    by_equation = {r[1]: r for r in rows[1:]}   # one row per failing gate; here each gate fails one equation
    assert by_equation["`toy.eq3`"][3] == "raised ValueError" and "n must be at most 4" in by_equation["`toy.eq3`"][5]
    assert by_equation["`toy.eq1`"][3] == "the gate's assertion"


def test_a_placement_the_package_has_no_path_for_is_not_run_in_its_cell_as_check_says():
    """The ledger's cell and `check --subject` decide alike (fidelity.gaterun.conformance.paths_not_run): a layout
    every lone instance of which the package refused is not run, though gates holding it beside others passed."""
    from types import SimpleNamespace

    from fidelity.gaterun.conformance import LACKED_REASON
    from fidelity.report.ledger.subject_matrix import third_party_cell

    row = {"gate": "contract", "equations": ["p.eq3", "p.sliced"], "failed": [],
           "subjects": {"pkg": {"status": "passed", "passed": 3, "not_run": 0, "not_run_reasons": []}}}
    cat = SimpleNamespace(equations={})
    assert third_party_cell(cat, "p.sliced", [row], "pkg", frozenset())["status"] == "passed"
    cell = third_party_cell(cat, "p.sliced", [row], "pkg", frozenset({"p.sliced"}))
    assert cell["status"] == "not run" and cell["reasons"] == [LACKED_REASON]
