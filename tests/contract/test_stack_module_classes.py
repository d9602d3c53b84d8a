"""A hidden-in, hidden-out mHC package (tiedmhc/) wrapped as the mhc_stack mechanism (tied_stack_adapter.py) and
run through `fidelity check --subject tied_stack_adapter:OBJECT`, as a user runs it: the stack gates of the
module classes (tests/gates/test_mhc_stack_defaults.py, test_stack_parameters_alive.py, test_stack_train_eval.py)
hold it to one connection of its own per layer and to Table 5's n, whatever its parameter names.

The package as written passes them; one connection run at every layer is a finding of the parameter count under
Eqs. 3 and 7 (its every parameter is alive and its backward right, so nothing else sees it); two streams are a
finding under mhc.table5.n alone (the whole copies of the hidden hold, so Eq. 3, Eq. 6 and the layout do not
carry it)."""
import pytest

from fidelity.gaterun.conformance import text_lines

from subject_check import conformance_of

VARIANTS = ("SUBJECT", "TIED", "TWO_STREAMS")
DEFAULTS = "tests/gates/test_mhc_stack_defaults.py::"
N = DEFAULTS + "test_with_every_body_zero_the_stack_as_shipped_returns_table_5s_n_copies_of_the_hidden"
COUNT = DEFAULTS + "test_a_stack_of_l_layers_holds_l_connections_of_its_own"
ALIVE = "tests/gates/test_stack_parameters_alive.py::test_moving_each_parameter_of_the_mhc_stack_moves_its_output"
TRAIN_EVAL = "tests/gates/test_stack_train_eval.py::test_the_mhc_stack_gives_the_same_bits_in_eval_mode"
OURS = (N, COUNT, ALIVE, TRAIN_EVAL)
OUR_FILES = ("test_mhc_stack_defaults.py", "test_stack_parameters_alive.py", "test_stack_train_eval.py")


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    # SUBJECT and TIED are read at this file's gates alone (the stack's only gates of Table 5's n are among them);
    # TWO_STREAMS's whole run: no instance anywhere differs from our choice
    return conformance_of("tied_stack_adapter", VARIANTS, gate_files={"SUBJECT": OUR_FILES, "TIED": OUR_FILES})


def _equation(conformance: dict, equation: str) -> dict:
    (eq,) = [e for e in conformance["equations"] if e["equation"] == equation]
    return eq


def _outcomes(conformance: dict) -> dict[str, str]:
    """gate -> its outcome, for the gates of this file, from every equation that lists them."""
    return {gate: outcome for e in conformance["equations"] for gate, outcome in e["gates"].items() if gate in OURS}


def _findings(conformance: dict) -> dict[str, set[str]]:
    """gate -> the equations its findings are listed under, for the gates of this file."""
    found: dict[str, set[str]] = {}
    for e in conformance["equations"]:
        for f in e["findings"]:
            if f["gate"] in OURS:
                found.setdefault(f["gate"], set()).add(e["equation"])
    return found


def test_the_package_as_written_passes_every_module_class_gate_of_the_stack(runs):
    assert _outcomes(runs["SUBJECT"]) == {gate: "passed" for gate in OURS}, \
        "\n".join(text_lines(_equation(runs["SUBJECT"], "mhc.eq3")))
    assert _equation(runs["SUBJECT"], "mhc.table5.n")["verdict"] == "passed"


def test_one_connection_run_at_every_layer_is_a_finding_of_the_parameter_count_alone(runs):
    assert _findings(runs["TIED"]) == {COUNT: {"mhc.eq3", "mhc.eq7"}}
    (finding,) = [f for f in _equation(runs["TIED"], "mhc.eq3")["findings"] if f["gate"] == COUNT]
    assert finding["gate_class"] == "defaults_as_shipped"
    assert "{1: 24, 2: 24, 3: 24}" in finding["message"]
    assert "one connection reused by every layer" in finding["message"]
    assert _outcomes(runs["TIED"])[ALIVE] == "passed"


def test_two_streams_are_a_finding_under_table_5s_n_alone(runs):
    assert _findings(runs["TWO_STREAMS"]) == {N: {"mhc.table5.n"}}
    (finding,) = _equation(runs["TWO_STREAMS"], "mhc.table5.n")["findings"]
    assert "returns 2 copies of h" in finding["message"] and "the spec's n is 4" in finding["message"]
    assert _equation(runs["TWO_STREAMS"], "mhc.table5.n")["verdict"] == "finding"
    assert runs["TWO_STREAMS"]["failing_instances"]["differs_from_our_choice"] == 0  # Table 5 is the paper's (tier b)
