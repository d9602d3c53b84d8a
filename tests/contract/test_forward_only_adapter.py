"""A forward-only adapter (forward_only_adapter.py, for npbalance/, NumPy: no gradient at all) through
`fidelity check --subject forward_only_adapter:OBJECT`, as a user runs it. Declaring
Capability(backward=("none",)) runs every forward gate once (in its "autograd" instance, called without
`backward=`), runs no gradient gate, and says why for each instance left out; the package's state that
lives between calls comes out as a finding labelled by the promise it breaks."""
import pytest

from fidelity.gaterun.conformance import text_lines

from subject_check import conformance_of

SINKHORN_EQUATIONS = {"mhc.eq6", "mhc.eq9", "mhc.table5.tmax", "mhc.init_static_bias", "mhc.composite", "mhc.stateless"}
STATELESS_GATE = "tests/gates/test_sinkhorn_module_stateless.py::test_the_same_call_repeated_gives_the_same_bits"
GRADIENT_GATES = ("tests/gates/test_sinkhorn_gradients.py::", "tests/gates/test_sinkhorn_gradient_reach.py::",
                  "tests/gates/test_sinkhorn_module_jacobian.py::")


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return conformance_of("forward_only_adapter", ("SUBJECT", "NEVER_RESET", "DEPTH_ATTENTION"))


def _equations(conformance: dict) -> dict[str, dict]:
    return {e["equation"]: e for e in conformance["equations"]}


def test_a_forward_only_subject_passes_every_sinkhorn_equation_on_the_forward_gates_alone(runs):
    eqs = _equations(runs["SUBJECT"])
    assert set(eqs) == SINKHORN_EQUATIONS
    assert {e["verdict"] for e in eqs.values()} == {"passed"}, "\n".join(
        line for e in eqs.values() for line in text_lines(e))
    assert all(e["instances"]["passed"] > 0 for e in eqs.values())
    assert eqs["mhc.stateless"]["gates"][STATELESS_GATE] == "passed"  # the forward instances of the stateless gate ran
    for gate, status in eqs["mhc.eq9"]["gates"].items():
        if gate.startswith(GRADIENT_GATES):
            assert status == "not run", (gate, status)
    reasons = eqs["mhc.eq9"]["not_run_reasons"]
    assert ("subject npbalance is forward-only for sinkhorn (backward=('none',)): a gate that takes a gradient "
            "does not apply") in reasons
    assert ("subject npbalance is forward-only for sinkhorn: its one forward runs in the 'autograd' instance "
            "of this gate") in reasons  # the 'manual' instance: the same forward, not counted twice
    assert runs["SUBJECT"]["failing_instances"] == {"findings": 0, "errors": 0, "differs_from_our_choice": 0}


def test_state_kept_between_calls_is_a_finding_labelled_stateless_in_both_dtypes(runs):
    eqs = _equations(runs["NEVER_RESET"])
    assert eqs["mhc.stateless"]["verdict"] == "finding"  # listed under its cause, not under Eq. 9
    assert not [f for f in eqs["mhc.eq9"]["findings"] if f["gate"] == STATELESS_GATE]
    stateless = [f for f in eqs["mhc.stateless"]["findings"] if f["gate"] == STATELESS_GATE]
    assert sorted(f["nodeid"].rsplit("[", 1)[1] for f in stateless) == [
        "npbalance-warm-cpu-autograd-f32-forward]", "npbalance-warm-cpu-autograd-f64-forward]"]
    assert {f["gate_class"] for f in stateless} == {"stateless"}
    assert all("A, B (other inputs), A again on one object" in f["message"] for f in stateless)
    text = "\n".join(text_lines(eqs["mhc.stateless"]))
    assert f"finding  [stateless] {stateless[0]['nodeid']}: " in text
    assert not any(e["errors"] for e in eqs.values())
    failing = {f["nodeid"] for e in eqs.values() for f in e["findings"]}
    assert runs["NEVER_RESET"]["failing_instances"] == {"findings": len(failing), "errors": 0, "differs_from_our_choice": 0}


def test_a_forward_only_depth_attention_runs_its_forward_gates_and_no_gradient_gate(runs):
    gates = {g: s for e in runs["DEPTH_ATTENTION"]["equations"] for g, s in e["gates"].items()}
    file = "tests/gates/test_attnres_depth_attention.py::"
    for forward in ("test_three_score_conventions_give_the_oracle_weights_and_output",
                    "test_each_position_has_one_softmax_over_its_sources",
                    "test_general_case_outputs_match_the_closed_form"):
        assert gates[file + forward] == "passed", forward
    for gradient in ("test_general_case_gradients_match_the_oracle", "test_sources_query_and_gain_all_receive_a_gradient",
                     "test_gradients_pass_gradcheck_in_float64_for_every_convention"):
        assert gates[file + gradient] == "not run", gradient
    assert gates["tests/gates/test_rmsnorm_mean_form.py::test_key_rmsnorm_read_through_depth_attention_scores"] == "passed"
    assert runs["DEPTH_ATTENTION"]["failing_instances"] == {"findings": 0, "errors": 0, "differs_from_our_choice": 0}
