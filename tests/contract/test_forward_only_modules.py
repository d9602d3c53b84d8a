"""Forward-only module packages (forward_only_modules.py: every module mechanism, its forward under no_grad,
Capability(backward=("none",))) through `fidelity check --subject`, as a user runs them: every forward
gate of each mechanism runs and passes, every gate that takes a gradient is not run and says why (by its
gate class, or by the instance that takes one: a statelessness gate's backward half), and state kept
between calls is still a finding labelled stateless."""
import pytest

from fidelity.gaterun.conformance import text_lines

from forward_only_modules import FACTORIES
from subject_check import reports_of

REASON = "subject forward-only-modules is forward-only for {} (backward=('none',)): a gate that takes a gradient does not apply"
STATELESS = {"mhc_residual": "tests/gates/test_mhc_module_stateless.py::test_one_module_called_after_another_input_gives_the_same_bits",
             "block_attnres": "tests/gates/test_attnres_module_stateless.py::test_one_block_module_reused_gives_the_same_bits_on_every_call",
             "mhc_stack": "tests/gates/test_mhc_stack.py::test_one_stack_called_after_another_hidden_gives_the_same_bits",
             "hc_stack": "tests/gates/test_hc_stack.py::test_one_stack_called_after_another_hidden_gives_the_same_bits"}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    # apart, side by side: EVERY's whole run is the longest of tests/contract; NEVER_RESET's after it in one
    # process ran past the 600 s limit on a loaded machine
    return reports_of("forward_only_modules", ("EVERY", "NEVER_RESET"), apart=True)


def _gates(report: dict, mechanism: str) -> dict[str, dict]:
    """gate -> its row for the subject, for the gates of `mechanism`."""
    return {g["gate"]: row for g in report["gates"] if g["mechanism"] == mechanism for row in g["subjects"].values()}


def test_no_instance_of_any_module_mechanism_has_a_finding_or_an_error(runs):
    conformance = runs["EVERY"]["conformance"]
    assert conformance["failing_instances"] == {"findings": 0, "errors": 0, "differs_from_our_choice": 0}, "\n".join(
        line for e in conformance["equations"] for line in text_lines(e))


def test_the_forward_only_package_provides_every_built_in_module_mechanism():
    from fidelity.mechanisms.registry import BUILTIN, load_mechanism

    modules = {m.name for m in map(load_mechanism, BUILTIN) if m.kind == "module"}
    assert set(FACTORIES) == modules


@pytest.mark.parametrize("mechanism", FACTORIES)
def test_a_forward_only_module_passes_every_forward_gate_and_runs_no_gradient_gate(runs, mechanism):
    gates = _gates(runs["EVERY"], mechanism)
    assert {row["status"] for row in gates.values()} == {"passed", "not run"}
    assert sum(row["status"] == "passed" for row in gates.values()) >= 3
    reasons = {r for row in gates.values() for r in row["not_run_reasons"]}
    assert "Skipped: " + REASON.format(mechanism) in reasons
    if mechanism in STATELESS:  # its forward instances ran; its backward half is the one left out
        assert gates[STATELESS[mechanism]]["status"] == "passed"


def test_the_gradient_gates_of_every_module_are_the_ones_not_run(runs):
    """Some by their gate class (gate_classes.GRADIENT), one by the instance (require_gradient); never a
    forward gate such as train_eval or statelessness."""
    not_run = {g for mechanism in FACTORIES for g, row in _gates(runs["EVERY"], mechanism).items()
               if row["status"] == "not run"}
    assert {"tests/gates/test_hc_module_gradients.py::test_the_jacobian_of_dhc_with_respect_to_H_is_the_oracles",
            "tests/gates/test_mhc_stack.py::test_the_hidden_and_every_parameter_of_the_stack_receive_a_gradient",
            "tests/gates/test_attnres_loop_model.py::test_readout_of_every_iteration_contains_that_iterations_body_output",
            "tests/gates/test_loop_module_gradients.py::test_the_loop_backward_matches_central_differences_for_every_parameter",
            } <= not_run
    assert not any("train_eval" in g or "stateless" in g for g in not_run)


def test_a_forward_only_module_that_counts_its_calls_is_a_stateless_finding(runs):
    conformance = runs["NEVER_RESET"]["conformance"]
    findings = [f for e in conformance["equations"] for f in e["findings"]]
    assert {f["gate"] for f in findings} == {STATELESS["mhc_residual"]}
    assert {f["gate_class"] for f in findings} == {"stateless"}
    assert all("calls" in f["message"] and f["nodeid"].endswith("-forward]") for f in findings)
    assert conformance["failing_instances"] == {"findings": len({f["nodeid"] for f in findings}), "errors": 0, "differs_from_our_choice": 0}
