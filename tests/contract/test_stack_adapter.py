"""A hidden-in, hidden-out mHC package (hiddenmhc/: the streams live inside one module) wrapped as the
mhc_stack mechanism (stack_adapter.py) and run through `fidelity check --subject stack_adapter:OBJECT`,
as a user runs it. The package as written passes; each shortcut its variants took comes out as a
finding labelled by the promise it breaks: a detached skip path (gradients_finite_differences), a
parameter that is never used, named as dead (gradient_reach), a counter that is never reset (stateless), an
H_res whose columns do not sum to one, seen as the streams' sum a zero-body layer changed (mhc.eq6)."""
import pytest

from fidelity.gaterun.conformance import text_lines

from subject_check import conformance_of

VARIANTS = ("SUBJECT", "DETACHED_SKIP", "DEAD_PARAMETER", "NEVER_RESET", "ROWS_ONLY")
GATES = "tests/gates/test_mhc_stack.py::"
FD = GATES + "test_the_stacks_backward_is_the_derivative_of_its_forward_for_the_hidden_and_every_parameter"
REACH = GATES + "test_the_hidden_and_every_parameter_of_the_stack_receive_a_gradient"
STATELESS = GATES + "test_one_stack_called_after_another_hidden_gives_the_same_bits"
STREAMS_SUM = "tests/gates/test_mhc_stack_streams.py::test_a_zero_body_layer_keeps_the_sum_of_the_streams_a_layer_before_it_made"
ALIVE = "tests/gates/test_stack_parameters_alive.py::test_moving_each_parameter_of_the_mhc_stack_moves_its_output"


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return conformance_of("stack_adapter", VARIANTS)


def _eq3(conformance: dict) -> dict:
    return _equation(conformance, "mhc.eq3")


def _equation(conformance: dict, equation: str) -> dict:
    (eq,) = [e for e in conformance["equations"] if e["equation"] == equation]
    return eq


def _findings_by_gate(conformance: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for f in _eq3(conformance)["findings"]:
        found.setdefault(f["gate"], []).append(f)
    return found


def test_the_package_as_written_passes_every_stack_gate(runs):
    eq = _eq3(runs["SUBJECT"])
    assert eq["verdict"] == "passed", "\n".join(text_lines(eq))
    assert {FD, REACH, STATELESS, STREAMS_SUM} <= set(eq["gates"]) and set(eq["gates"].values()) == {"passed"}
    assert not eq["errors"]
    eq6 = _equation(runs["SUBJECT"], "mhc.eq6")["gates"]  # every gate of Eq. 6, the streams' sum among them
    assert eq6.get(STREAMS_SUM) == "passed" and set(eq6.values()) == {"passed"}


def test_a_detached_skip_path_is_a_finding_of_the_finite_difference_gate_at_the_hidden(runs):
    found = _findings_by_gate(runs["DETACHED_SKIP"])
    assert set(found) == {FD}
    (finding,) = found[FD]
    assert finding["gate_class"] == "gradients_finite_differences"
    assert "at 'h'" in finding["message"]  # the worst entry is the hidden's: its skip path lost its gradient
    assert not _eq3(runs["DETACHED_SKIP"])["errors"]


def test_a_parameter_never_used_is_named_as_dead(runs):
    found = _findings_by_gate(runs["DEAD_PARAMETER"])
    assert set(found) == {REACH, ALIVE}  # no gradient, and moving it moves nothing (issue 51: parameters_alive)
    (moved,) = found[ALIVE]
    assert moved["gate_class"] == "parameters_alive"
    named_not_moving = moved["full_message"].split("; the largest others")[0]
    assert all(f"'connections.{k}.res_logits'" in named_not_moving for k in range(3)), moved["full_message"]
    (finding,) = found[REACH]
    assert finding["gate_class"] == "gradient_reach"
    assert "dead" in finding["message"]
    assert "'connections.0.res_logits' 0, 'connections.1.res_logits' 0" in finding["full_message"]
    named_dead = finding["full_message"].split("; the largest others")[0]
    assert "pre_logits" not in named_dead and "post_logits" not in named_dead


def test_a_counter_never_reset_is_a_stateless_finding_naming_it(runs):
    assert not _findings_by_gate(runs["NEVER_RESET"])  # listed under its cause, mhc.stateless, not Eq. 3
    found = {}
    for f in _equation(runs["NEVER_RESET"], "mhc.stateless")["findings"]:
        found.setdefault(f["gate"], []).append(f)
    assert set(found) == {STATELESS}
    assert len(found[STATELESS]) == 2  # with and without a backward
    assert all(f["gate_class"] == "stateless" and "state stack.calls: int 0 -> int 1 -> int 2 -> int 3" in f["message"]
               for f in found[STATELESS])
    assert runs["NEVER_RESET"]["failing_instances"] == {"findings": 2, "errors": 0, "differs_from_our_choice": 0}
    text = "\n".join(text_lines(_equation(runs["NEVER_RESET"], "mhc.stateless")))
    assert "finding  [stateless] " + STATELESS in text


def test_an_h_res_whose_columns_do_not_sum_to_one_is_a_finding_under_the_birkhoff_polytope(runs):
    for equation in ("mhc.eq6", "mhc.eq3"):
        found = {f["gate"] for f in _equation(runs["ROWS_ONLY"], equation)["findings"]}
        assert found == {STREAMS_SUM}, (equation, found)
    (finding,) = _equation(runs["ROWS_ONLY"], "mhc.eq6")["findings"]
    assert "H_res's columns do not sum to one" in finding["message"]
    assert runs["ROWS_ONLY"]["failing_instances"] == {"findings": 1, "errors": 0, "differs_from_our_choice": 0}
