"""Gates (train_eval): a hidden-in, hidden-out stack gives the same bits in eval mode as in training mode
(mhc_stack, hc_stack).

Neither paper gives a connection a mode-dependent part (mHC's Sinkhorn runs its t_max steps at inference as in
training; HC's dynamic coefficients are computed from the input in both), so a stack whose eval() takes another
path serves at inference what no other gate measured. Built and held by stack_module_classes.py: a three-layer
stack at residual_stack's seeded point (off the init, where a dropped dynamic part or a cached H_res would read
the same), float32, called in training mode, eval mode and training mode again (fidelity.gates.train_eval).
Reading: the number of results that differ from training mode's (must be 0; bit for bit).
"""
import pytest

import stack_module_classes as classes


@pytest.mark.gate(equations=["mhc.eq3"], mechanism="mhc_stack", gate_class="train_eval")
def test_the_mhc_stack_gives_the_same_bits_in_eval_mode(subject, device):
    classes.same_in_train_and_eval(subject, "mhc_stack", device)


@pytest.mark.gate(equations=["hc.eq5"], mechanism="hc_stack", gate_class="train_eval")
def test_the_hc_stack_gives_the_same_bits_in_eval_mode(subject, device):
    classes.same_in_train_and_eval(subject, "hc_stack", device)
