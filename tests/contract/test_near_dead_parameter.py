"""A parameter whose gradient is ~1e-30 of the others' is dead, through `fidelity check --subject` as a user runs
it: faintmhc (tests/contract/faintmhc) mixes its streams by I + 1e-30 (H_res - I) (RES_SCALED), or writes back by
2 sigmoid(1e-30 post_logits) (POST_SCALED), so those logits get gradients of rounding size, never exactly zero,
while every identity of the streams holds. The gradient_reach gate of mhc_stack names each one with its magnitude
beside the largest others', as a finding; the parameters_alive gate of the stacks (issue 51) names them too, as
moving them moves the output within rounding; and nothing else is found."""
import re

import pytest

from subject_check import conformance_of

REACH = "tests/gates/test_mhc_stack.py::test_the_hidden_and_every_parameter_of_the_stack_receive_a_gradient"
ALIVE = "tests/gates/test_stack_parameters_alive.py::test_moving_each_parameter_of_the_mhc_stack_moves_its_output"


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return conformance_of("near_dead_adapter", ("RES_SCALED", "POST_SCALED"))


def _the_reach_finding(conformance: dict) -> dict:
    (eq3,) = [e for e in conformance["equations"] if e["equation"] == "mhc.eq3"]
    assert sorted(f["gate"] for f in eq3["findings"]) == sorted([REACH, ALIVE])
    assert (conformance["failing_instances"]["findings"], conformance["failing_instances"]["errors"]) == (2, 0)
    (finding,) = [f for f in eq3["findings"] if f["gate"] == REACH]
    assert finding["gate_class"] == "gradient_reach"
    return finding


def _magnitudes_named_dead(said: str, parameter: str) -> list[float]:
    named_dead = said.split("; the largest others")[0]
    return [float(m) for m in re.findall(rf"'connections\.\d\.{parameter}' ([0-9.e+-]+)", named_dead)]


@pytest.mark.parametrize("variant, parameter", [("RES_SCALED", "res_logits"), ("POST_SCALED", "post_logits")])
def test_a_contribution_scaled_by_1e_30_is_a_gradient_reach_finding_naming_each_parameter_and_its_size(
        runs, variant, parameter):
    said = _the_reach_finding(runs[variant])["full_message"]
    magnitudes = _magnitudes_named_dead(said, parameter)
    assert len(magnitudes) == 3, f"each layer's {parameter} named dead with its max |grad|: {said}"
    assert all(m < 1e-25 for m in magnitudes), said
    assert "the largest others: 'h' " in said
    others = said.split("; the largest others")[0].split(": ", 1)[1]
    assert "pre_logits" not in others, said  # only the scaled parameter is named
    (eq3,) = [e for e in runs[variant]["equations"] if e["equation"] == "mhc.eq3"]
    (moved,) = [f for f in eq3["findings"] if f["gate"] == ALIVE]
    named_not_moving = moved["full_message"].split("; the largest others")[0]
    assert all(f"'connections.{k}.{parameter}'" in named_not_moving for k in range(3)), moved["full_message"]
    assert "pre_logits" not in named_not_moving, moved["full_message"]


def test_the_scaled_write_back_gets_a_gradient_that_is_not_zero(runs):
    """POST_SCALED's post_logits get a rounding-size gradient, not an exact zero: an all-zero rule passes them."""
    said = _the_reach_finding(runs["POST_SCALED"])["full_message"]
    assert all(m > 0 for m in _magnitudes_named_dead(said, "post_logits")), said
