"""A finding is listed under the equations its instance exercises on a path the subject has (issue 51):
attribution_adapter.WIDTH_ZERO (no sliced layout; width 0 built as width 1) through `fidelity check --subject`."""
import pytest

from fidelity.gaterun.conformance import LACKED_REASON

from subject_check import conformance_of

CONTRACT = "tests/gates/test_mhc_module_contract.py::test_each_invalid_argument_is_refused_with_the_documented_error"


@pytest.fixture(scope="module")
def verdicts() -> dict[str, dict]:
    conformance = conformance_of("attribution_adapter", ("WIDTH_ZERO",))["WIDTH_ZERO"]
    return {v["equation"]: v for v in conformance["equations"]}


def _nodeids(verdict: dict) -> list[str]:
    return [f["nodeid"] for f in verdict["findings"]]


def test_a_width_built_instead_of_refused_is_a_finding_under_the_width_equation(verdicts):
    assert [n for n in _nodeids(verdicts["mhc.eq3"]) if n.startswith(CONTRACT) and "C_zero" in n], verdicts["mhc.eq3"]


def test_it_is_no_finding_about_a_layout_the_package_does_not_have(verdicts):
    sliced = verdicts["mhc.layout.sliced"]
    assert sliced["findings"] == [] and sliced["verdict"] == "not run", sliced
    assert LACKED_REASON in sliced["not_run_reasons"]


def test_nor_about_the_equations_its_case_does_not_exercise(verdicts):
    for equation in ("mhc.layout.replicated", "mhc.init_dynamic"):
        assert not [n for n in _nodeids(verdicts[equation]) if "C_zero" in n], verdicts[equation]
