"""Forward-only module packages (forward_only_modules.py: every module mechanism, its forward under no_grad,
Capability(backward=("none",))) through `fidelity check --subject`, as a user runs them: every forward
gate of the mechanism runs and passes, every gate that takes a gradient is not run and says why (by its
gate class, or by the instance that takes one: a statelessness gate's backward half), and state kept
between calls is still a finding labelled stateless."""
import pytest

from fidelity.check.conformance import text_lines

from subject_check import conformance_of

OBJECTS = {"HC": "hyper_connection", "MHC": "mhc_residual", "BLOCK": "block_attnres", "LOOP": "loop_model",
           "STACK": "mhc_stack"}
REASON = "subject forward-only-{} is forward-only for {} (backward=('none',)): a gate that takes a gradient does not apply"
STATELESS = {"mhc_residual": "tests/gates/test_mhc_module_stateless.py::test_one_module_called_after_another_input_gives_the_same_bits",
             "block_attnres": "tests/gates/test_attnres_module_stateless.py::test_one_block_module_reused_gives_the_same_bits_on_every_call",
             "mhc_stack": "tests/gates/test_mhc_stack.py::test_one_stack_called_after_another_hidden_gives_the_same_bits"}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return conformance_of("forward_only_modules", (*OBJECTS, "NEVER_RESET"))


def _gates(conformance: dict) -> dict[str, str]:
    return {g: s for e in conformance["equations"] for g, s in e["gates"].items()}


@pytest.mark.parametrize("obj", OBJECTS)
def test_a_forward_only_module_passes_every_forward_gate_and_runs_no_gradient_gate(runs, obj):
    mechanism, conformance = OBJECTS[obj], runs[obj]
    gates = _gates(conformance)
    assert conformance["failing_instances"] == {"findings": 0, "errors": 0}, "\n".join(
        line for e in conformance["equations"] for line in text_lines(e))
    assert {s for s in gates.values()} == {"passed", "not run"}
    assert sum(s == "passed" for s in gates.values()) >= 3
    reasons = {r for e in conformance["equations"] for r in e["not_run_reasons"]}
    assert REASON.format(mechanism, mechanism) in reasons
    if mechanism in STATELESS:  # its forward instances ran; its backward half is the one left out
        assert gates[STATELESS[mechanism]] == "passed"


def test_the_gradient_gates_of_every_module_are_the_ones_not_run(runs):
    """Some by their gate class (gate_classes.GRADIENT), one by the instance (require_gradient); never a
    forward gate such as train_eval or statelessness."""
    not_run = {g for obj in OBJECTS for g, s in _gates(runs[obj]).items() if s == "not run"}
    assert {"tests/gates/test_hc_module_gradients.py::test_the_jacobian_of_dhc_with_respect_to_H_is_the_oracles",
            "tests/gates/test_mhc_stack.py::test_the_hidden_and_every_parameter_of_the_stack_receive_a_gradient",
            "tests/gates/test_attnres_loop_model.py::test_readout_of_every_iteration_contains_that_iterations_body_output",
            "tests/gates/test_loop_module_gradients.py::test_the_loop_backward_matches_central_differences_for_every_parameter",
            } <= not_run
    assert not any("train_eval" in g or "stateless" in g for g in not_run)


def test_a_forward_only_module_that_counts_its_calls_is_a_stateless_finding(runs):
    conformance = runs["NEVER_RESET"]
    findings = [f for e in conformance["equations"] for f in e["findings"]]
    assert {f["gate"] for f in findings} == {STATELESS["mhc_residual"]}
    assert {f["gate_class"] for f in findings} == {"stateless"}
    assert all("calls" in f["message"] and f["nodeid"].endswith("-forward]") for f in findings)
    assert conformance["failing_instances"] == {"findings": len({f["nodeid"] for f in findings}), "errors": 0}
