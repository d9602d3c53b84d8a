"""A newcomer's adapter (newcomer_adapter.py, for fakepkg/, a package the project has never seen)
through `fidelity check --subject newcomer_adapter:OBJECT`, as a user runs it: a child process
with tests/contract on PYTHONPATH. The correct adapter passes the Sinkhorn gates; each of three
mistakes gets its own labelled outcome, in --json and in the text report."""
import re

import pytest

from fidelity.gaterun.conformance import text_lines

from subject_check import HERE, conformance_of

VARIANTS = ("SUBJECT", "BARE_NOT_IMPLEMENTED", "PACKAGE_VALUE_ERROR", "SILENT_CAST")
F32, F64 = re.compile(r"-f32[-\]]"), re.compile(r"-f64[-\]]")  # the dtype's parameter id in a node id
SINKHORN_EQUATIONS = {"mhc.eq6", "mhc.eq9", "mhc.table5.tmax"}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return conformance_of("newcomer_adapter", VARIANTS)


def _equations(conformance: dict) -> dict[str, dict]:
    return {e["equation"]: e for e in conformance["equations"]}


def _text(conformance: dict) -> str:
    return "\n".join(line for e in conformance["equations"] for line in text_lines(e))


def test_the_correct_adapter_passes_every_sinkhorn_gate(runs):
    eqs = _equations(runs["SUBJECT"])
    assert SINKHORN_EQUATIONS <= set(eqs)
    assert {e["verdict"] for e in eqs.values()} == {"passed"}, _text(runs["SUBJECT"])
    assert not any(e["findings"] or e["errors"] for e in eqs.values())
    # the manual route is outside its capability: not run, with the reason, never passed
    assert any("manual" in r for e in eqs.values() for r in e["not_run_reasons"])


def test_a_bare_not_implemented_error_is_an_error_that_says_to_raise_notrun(runs):
    eqs = _equations(runs["BARE_NOT_IMPLEMENTED"])
    assert eqs["mhc.eq9"]["verdict"] == "error" and not eqs["mhc.eq9"]["findings"]
    errors = [x for e in eqs.values() for x in e["errors"]]
    assert errors and {x["exc_type"] for x in errors} == {"NotImplementedError"}
    assert not any(F32.search(x["nodeid"]) for x in errors)           # float32 ran, and passed
    assert all("fidelity.subjects.subject.NotRun" in x["hint"] for x in errors)
    text = _text(runs["BARE_NOT_IMPLEMENTED"])
    assert "error    " in text and "NotImplementedError: fakepkg adapter: float32 only" in text
    assert "raise fidelity.subjects.subject.NotRun(reason)" in text


def test_the_packages_own_value_error_is_an_error_not_a_finding(runs):
    eqs = _equations(runs["PACKAGE_VALUE_ERROR"])
    errors = [x for e in eqs.values() for x in e["errors"]]
    assert eqs["mhc.eq9"]["verdict"] == "error"
    assert not any(e["findings"] for e in eqs.values())
    assert errors and {x["exc_type"] for x in errors} == {"ValueError"}
    assert all("fakepkg.balance_fast supports n <= 4" in x["message"] for x in errors)
    assert all(re.fullmatch(r".*fakepkg/__init__\.py:\d+", x["raised_in"]) for x in errors)  # raised by the package
    assert "ValueError: fakepkg.balance_fast supports n <= 4, got n = " in _text(runs["PACKAGE_VALUE_ERROR"])


def test_a_float64_output_for_float32_input_is_a_finding_of_its_own(runs):
    eqs = _equations(runs["SILENT_CAST"])
    findings = [f for e in eqs.values() for f in e["findings"]]
    assert eqs["mhc.eq9"]["verdict"] == "finding"
    assert findings and all(f["message"].startswith("silent cast: float32 in, float64 out from sinkhorn")
                            for f in findings)
    assert not any(F64.search(f["nodeid"]) for f in findings)      # float64 in, float64 out: no cast
    assert not any(e["errors"] for e in eqs.values())
    assert "finding  " in _text(runs["SILENT_CAST"]) and "silent cast: float32 in, float64 out" in _text(runs["SILENT_CAST"])


class _SuiteAsked(Exception):
    pass


def test_jobs_sets_the_processes_of_a_subjects_gate_run(monkeypatch):
    from argparse import Namespace

    from fidelity.gaterun import conformance, gates_stage

    asked = []

    def suite(**options):
        asked.append(options.get("jobs"))
        raise _SuiteAsked

    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setattr(gates_stage, "run_gate_suite", suite)
    for jobs in (1, 3, None):
        with pytest.raises(_SuiteAsked):
            conformance.run(None, Namespace(subject="newcomer_adapter:SUBJECT", strict=False, jobs=jobs),
                            lambda *said: None)
    assert asked == [1, 3, None]
