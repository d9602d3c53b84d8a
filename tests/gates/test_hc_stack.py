"""Gates: Hyper-Connections as a package exposes them, hidden in and hidden out (mechanism hc_stack).

Five gates are residual_stack.py's, as for mhc_stack: the backward against central differences (along two seeded
random directions per tensor) and the gradient
reach at a seeded point of the stack's own parameters, the statelessness at the init as shipped, the interface's
refusals and default dtype.

One is HC's own, its init seen through the stack (Eq. 14, §2.1, Alg. 1), float64, built as shipped: the n
streams start as copies of h; with A_m = e_(k mod n), A_r = I, B = 1 and the dynamic weights 0, layer k reads
one stream, A_r keeps every stream and B adds the body's output to each, so all streams stay equal to the plain
residual x_(k+1) = x_k + T_k(x_k). Body k must read exactly x_k, and the readout, the sum of the n equal
streams, must be c x_L for a whole number c >= 1 (c = n; the gate does not know the package's n). A
non-identity A_r, a B other than 1, an A_m reading another mix, a non-zero dynamic init or a layer run out of
order reads as a body input or an output off the plain residual.

A failed body input is attributed to setup, Eq. 14 and Eq. 5; a failed output to Eq. 14, Eq. 5 and the readout
(fidelity.gates.attribution): a readout defect is no finding about the streams' setup.

Tolerance: 16 eps(float64), floor 1 (O(1) values): the identity is exact arithmetic (products by 0 and 1, a sum
of equal streams); 16 eps leaves room for a package's own order of operations.
"""
import pytest
import torch

import residual_stack as stack_gates
from fidelity.gates import readings
from fidelity.gates.attribution import checking
from fidelity.gates.compare import Tolerance, assert_close

MECH = "hc_stack"
EXACT = Tolerance(eps_multiple=16, floor=1.0)


@pytest.mark.gate(equations=["hc.eq5"], mechanism=MECH, gate_class="gradients_finite_differences")
def test_the_stacks_backward_is_the_derivative_of_its_forward_for_the_hidden_and_every_parameter(subject, device):
    stack_gates.backward_is_the_derivative(subject, MECH, device)


@pytest.mark.gate(equations=["hc.eq5"], mechanism=MECH, gate_class="gradient_reach")
def test_the_hidden_and_every_parameter_of_the_stack_receive_a_gradient(subject, device):
    stack_gates.gradients_reach(subject, MECH, device)


@pytest.mark.gate(equations=["hc.eq5", "hc.stateless"], mechanism=MECH, gate_class="stateless")
@pytest.mark.parametrize("with_backward", [False, True], ids=["forward", "with_backward"])
def test_one_stack_called_after_another_hidden_gives_the_same_bits(subject, device, with_backward):
    """stack(h) on h, on another hidden, on h again, at the init as shipped (float32, the default dtype)."""
    stack_gates.stateless(subject, MECH, device, with_backward, cause=("hc.stateless",))  # under its cause


@pytest.mark.gate(equations=["hc.eq5"], mechanism=MECH)
@pytest.mark.parametrize("case", stack_gates.REFUSAL_CASES)
def test_a_stack_without_a_body_or_below_width_one_is_refused_and_one_of_width_one_runs(subject, device, case):
    """factory(D, []) and factory(0, bodies) raise ValueError (Eq. 5 has no layer to connect, or no stream
    width; not asked of a package that reads its width off the hidden); factory(1, one body) builds and maps a
    hidden [2, 1] to a hidden [2, 1]."""
    stack_gates.refusals(subject, MECH, device, case)


@pytest.mark.gate(equations=["hc.eq5"], mechanism=MECH)
def test_a_stack_built_without_a_dtype_holds_float32_parameters(subject, device):
    """factory(D, bodies) with no dtype: every parameter of the stack is float32, the interface's default."""
    stack_gates.default_dtype(subject, MECH, device)


class _Seen(torch.nn.Module):
    """A layer body that keeps what it was called on."""

    def __init__(self, body: torch.nn.Module):
        super().__init__()
        self.body, self.inputs = body, []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.inputs.append(x.detach().clone())
        return self.body(x)


@pytest.mark.gate(equations=["hc.eq14", "hc.setup", "hc.readout_sum", "hc.eq5"], mechanism=MECH,
                  gate_class="init_through_module")
def test_a_fresh_stack_feeds_each_body_the_plain_residual_and_reads_out_whole_copies_of_it(subject, device):
    """At the init as shipped (float64): body k is called once, on x_k of the plain residual stack
    x_(k+1) = x_k + T_k(x_k), x_0 = h; the output is c x_L for a whole number c >= 1 (the streams summed).
    Reading: the worst relative error of the body inputs and the output."""
    dtype = torch.float64
    plain_bodies = stack_gates.bodies(dtype, device)
    h = stack_gates.hidden(stack_gates.SEED + 2, dtype, device)
    plain = [h]
    with torch.no_grad():
        for body in plain_bodies:
            plain.append(plain[-1] + body(plain[-1]))
    seen = [_Seen(body) for body in plain_bodies]
    stack, _, _ = stack_gates.built(subject, MECH, dtype, device, layer_bodies=seen)
    with torch.no_grad():
        out = stack(h)
    calls = [len(s.inputs) for s in seen]
    if calls != [1] * len(seen):
        readings.record(float("inf"))
        raise AssertionError(f"each body is called once per stack call; calls per body: {calls}")
    inputs = torch.stack([s.inputs[0].reshape(-1, stack_gates.D) for s in seen])
    with checking("hc.setup", "hc.eq14", "hc.eq5"):  # copies of h, the init, each layer's depth connection
        worst = assert_close(inputs, torch.stack(plain[:-1]), EXACT,
                             what="body k's input at the init as shipped vs x_k of the plain residual stack")
    last = plain[-1]
    with checking("hc.eq14", "hc.eq5", "hc.readout_sum"):  # the last layer's init and connection, the readout
        copies = round(float((out * last).sum() / (last * last).sum()))
        if copies < 1:
            readings.record(float("inf"))
            raise AssertionError(f"the output at the init as shipped is {copies} x the plain residual stack's x_L "
                                 f"(a sum of n equal streams is n >= 1 copies)")
        worst = max(worst, assert_close(out, copies * last, EXACT,
                                        what=f"the output at the init as shipped vs {copies} x x_L of the plain "
                                             f"residual stack (the streams summed)"))
    readings.record(worst)
