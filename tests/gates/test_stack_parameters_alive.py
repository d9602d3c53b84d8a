"""Gates (parameters_alive): every parameter of a hidden-in, hidden-out stack moves its output (mhc_stack, hc_stack).

Built and held by stack_module_classes.py: a three-layer stack at residual_stack's seeded point (its own
parameters in [-1, 1], written through named_parameters(), so any package's names do), float64 where the subject
computes in it, else float32. Each parameter tensor alone is moved by a seeded direction (entries uniform in
[-1/8, 1/8]) and put back; the largest change of stack(h) is its reading. No oracle gives a stack's change per
tensor under any package's names, so the bound is the gradient-reach rule on the changes: a tensor whose move
changes the output by 0, or by at most 32 eps of the largest change among the stack's tensors (rounding:
fidelity.gates.gradient_reach), is dead. The first and last connection's tensors are excused where the middle
twin is alive and the streams are not declared sliced (residual_stack.ends_left_dead_by_the_paper: with replicated
streams Eq. 6's row and column sums leave those H_res without an effect). Reading: the number of dead tensors
named (must be 0).
"""
import pytest

import stack_module_classes as classes


@pytest.mark.gate(equations=["mhc.eq3"], mechanism="mhc_stack", gate_class="parameters_alive")
def test_moving_each_parameter_of_the_mhc_stack_moves_its_output(subject, device):
    classes.parameters_alive(subject, "mhc_stack", device)


@pytest.mark.gate(equations=["hc.eq5"], mechanism="hc_stack", gate_class="parameters_alive")
def test_moving_each_parameter_of_the_hc_stack_moves_its_output(subject, device):
    classes.parameters_alive(subject, "hc_stack", device)
