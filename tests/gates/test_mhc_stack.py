"""Gates: mHC as a package exposes it, hidden in and hidden out (mechanism mhc_stack, mHC Eq. 3).

What each gate builds and holds is residual_stack.py's, shared with hc_stack: the stack built by its factory as
shipped around the gate's own two layer bodies, called on a seeded hidden; the backward against central
differences (along two seeded random directions per tensor) and the gradient reach at a seeded point of the stack's own parameters, the statelessness at the
init as shipped, the interface's refusals and default dtype. None depends on the stream layout inside.
"""
import pytest

import residual_stack as stack_gates

MECH = "mhc_stack"


@pytest.mark.gate(equations=["mhc.eq3"], mechanism=MECH, gate_class="gradients_finite_differences")
def test_the_stacks_backward_is_the_derivative_of_its_forward_for_the_hidden_and_every_parameter(subject, device):
    stack_gates.backward_is_the_derivative(subject, MECH, device)


@pytest.mark.gate(equations=["mhc.eq3"], mechanism=MECH, gate_class="gradient_reach")
def test_the_hidden_and_every_parameter_of_the_stack_receive_a_gradient(subject, device):
    stack_gates.gradients_reach(subject, MECH, device)


@pytest.mark.gate(equations=["mhc.eq3", "mhc.stateless"], mechanism=MECH, gate_class="stateless")
@pytest.mark.parametrize("with_backward", [False, True], ids=["forward", "with_backward"])
def test_one_stack_called_after_another_hidden_gives_the_same_bits(subject, device, with_backward):
    """stack(h) on h, on another hidden, on h again, at the init as shipped (float32, the default dtype)."""
    stack_gates.stateless(subject, MECH, device, with_backward, cause=("mhc.stateless",))  # under its cause


@pytest.mark.gate(equations=["mhc.eq3"], mechanism=MECH)
@pytest.mark.parametrize("case", stack_gates.REFUSAL_CASES)
def test_a_stack_without_a_body_or_below_width_one_is_refused_and_one_of_width_one_runs(subject, device, case):
    """factory(D, []) and factory(0, bodies) raise ValueError (Eq. 3 has no layer to connect, or no stream
    width; not asked of a package that reads its width off the hidden); factory(1, one body) builds and maps a
    hidden [2, 1] to a hidden [2, 1]."""
    stack_gates.refusals(subject, MECH, device, case)


@pytest.mark.gate(equations=["mhc.eq3"], mechanism=MECH)
def test_a_stack_built_without_a_dtype_holds_float32_parameters(subject, device):
    """factory(D, bodies) with no dtype: every parameter of the stack is float32, the interface's default."""
    stack_gates.default_dtype(subject, MECH, device)
