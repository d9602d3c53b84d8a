"""Issue 32: a depth attention without a learned gain lost the gates to which the gain is incidental (one
softmax per position, statelessness, the output's dtype) because each passed a gain it refused. Declared
Capability(lacks=("gain",)) (gainless_adapter.py), those gates call it without one (against the oracle's
unit-gain values where they compare values), and every gate that holds the gain is not run, saying so.

Issue 51: no gate passes a lacked gain (the adapter's own refusal is never the reason an instance is not
run); the gradient gates (closed form, oracle gradients, reach, gradcheck) run their gain-less instances on
such a subject, so a wrong backward to the sources is a finding; and only an optional input (a tensor
argument whose default is None) may be lacked: an option such as block_attnres's learned_gain is refused."""
import pytest

from fidelity.gaterun.conformance import text_lines
from fidelity.mechanisms.registry import declaration_problems, known_mechanisms

from gainless_adapter import LACKS_AN_OPTION, MISSPELLED
from subject_check import reports_of

GATES = "tests/gates/"
INCIDENTAL = {GATES + "test_attnres_depth_attention.py::test_each_position_has_one_softmax_over_its_sources",
              GATES + "test_attnres_module_stateless.py::test_depth_attention_gives_the_same_bits_on_every_call",
              GATES + "test_output_dtype_device.py::test_depth_attention_returns_the_dtype_and_device_of_its_sources"}
SPLIT_BY_THE_GAIN = {GATES + "test_attnres_depth_attention.py::" + name for name in (
    "test_general_case_outputs_match_the_closed_form", "test_general_case_gradients_match_the_oracle",
    "test_sources_query_and_gain_all_receive_a_gradient", "test_gradients_pass_gradcheck_in_float64_for_every_convention")}
REASON = "subject {} has no 'gain' for depth_attention (Capability lacks=('gain',)): this instance holds the gain"
ADAPTERS_REFUSAL = "gain must be None"  # the NotRun gainless_adapter raises when handed a gain


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return reports_of("gainless_adapter", ("SUBJECT", "DOUBLED_CHANNEL", "HALVED_SOURCE_GRADIENT"))


def _rows(report: dict) -> dict[str, dict]:
    return {g["gate"]: row for g in report["gates"] for row in g["subjects"].values()}


def test_the_gates_to_which_the_gain_is_incidental_run_without_it_and_pass(runs):
    rows, conformance = _rows(runs["SUBJECT"]), runs["SUBJECT"]["conformance"]
    assert all(rows[g]["status"] == "passed" and rows[g]["passed"] >= 2 for g in INCIDENTAL), {g: rows[g] for g in INCIDENTAL}
    assert conformance["failing_instances"] == {"findings": 0, "errors": 0, "differs_from_our_choice": 0}, "\n".join(
        line for e in conformance["equations"] for line in text_lines(e))


def test_the_gradient_gates_run_without_the_gain_and_its_own_instances_are_not_run_saying_so(runs):
    rows = _rows(runs["SUBJECT"])
    for gate in SPLIT_BY_THE_GAIN:
        assert rows[gate]["status"] == "passed" and rows[gate]["passed"] >= 3, (gate, rows[gate])
        assert "Skipped: " + REASON.format("gainless") in rows[gate]["not_run_reasons"], (gate, rows[gate])


def test_no_gate_hands_a_lacked_gain_to_the_subject(runs):
    """Every gate honours lacks: the adapter's own NotRun for a gain is the reason of no instance."""
    handed = {gate: row["not_run_reasons"] for gate, row in _rows(runs["SUBJECT"]).items()
              if any(ADAPTERS_REFUSAL in reason for reason in row["not_run_reasons"])}
    assert handed == {}


def test_a_wrong_backward_to_the_sources_of_a_gainless_subject_is_a_finding(runs):
    conformance = runs["HALVED_SOURCE_GRADIENT"]["conformance"]
    findings = {f["gate"] for e in conformance["equations"] for f in e["findings"]}
    file = GATES + "test_attnres_depth_attention.py::"
    assert {file + "test_general_case_gradients_match_the_oracle",
            file + "test_gradients_pass_gradcheck_in_float64_for_every_convention"} <= findings, sorted(findings)
    assert not any(e["errors"] for e in conformance["equations"])


def test_a_gain_of_ones_that_is_not_ones_is_a_finding_of_the_unit_gain_softmax_gate(runs):
    conformance = runs["DOUBLED_CHANNEL"]["conformance"]
    findings = {f["gate"] for e in conformance["equations"] for f in e["findings"]}
    assert GATES + "test_attnres_depth_attention.py::test_each_position_has_one_softmax_over_its_sources" in findings
    assert not any(e["errors"] for e in conformance["equations"])


def test_a_lacked_input_the_interface_does_not_take_is_a_problem_naming_the_optional_ones():
    [problem] = declaration_problems(MISSPELLED, known_mechanisms())
    assert problem == ("mechanism 'depth_attention': Capability.lacks names 'gian', which is not an optional input "
                       "of its interface (optional inputs, tensors whose default is None: gain); an option the "
                       "package cannot take a value of is refused with NotRun(reason) when that value is given")


def test_an_option_with_a_default_is_not_an_optional_input():
    """block_attnres's learned_gain (default False) is an option: lacking it would change no call the gates make."""
    [problem] = declaration_problems(LACKS_AN_OPTION, known_mechanisms())
    assert problem == ("mechanism 'block_attnres': Capability.lacks names 'learned_gain', which is not an optional "
                       "input of its interface (optional inputs, tensors whose default is None: none); an option "
                       "the package cannot take a value of is refused with NotRun(reason) when that value is given")
