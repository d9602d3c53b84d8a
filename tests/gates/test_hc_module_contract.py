"""Gates: the hyper-connection's factory and forward refuse what the interface says they refuse, each case an instance.

fidelity discover --module fidelity.impl.torch.hyper_connections left every guard unheld once the
module gates landed: with a guard removed or its boundary moved, n = 0 built a module with no
stream, d = 0 an empty one, a negative layer_index a wrong A_m, and an H of the wrong shape ran
into a torch error deep inside instead of the documented ValueError. The interface
(fidelity show mechanism:hyper_connection): ValueError for n < 1, d < 1 or layer_index < 0;
forward: ValueError when H is not [.., n, d]. The smallest valid sizes (n = 1, d = 1,
layer_index = 0) must build and run.

Reading `as_documented`: 1 when the case behaved as the interface says, 0 otherwise (the message
names what happened instead).
"""
import pytest
import torch

from fidelity.gates.refusals import assert_behaves_as_documented

N, D = 2, 3


def _build(factory, device, n=N, d=D, k=0, dynamic=True):
    return lambda: factory(n, d, k, dynamic=dynamic, dtype=torch.float64, device=device)


def _run(factory, device, shape, n=N, d=D, dynamic=True):
    def run():
        module = factory(n, d, 0, dynamic=dynamic, dtype=torch.float64, device=device)
        return module(torch.ones(shape, dtype=torch.float64, device=device), lambda h: h)
    return run


# case -> (the call, the error the interface names, or None when it must succeed)
CASES = {
    "n_zero": (lambda f, dev: _build(f, dev, n=0), ValueError),
    "n_negative": (lambda f, dev: _build(f, dev, n=-1), ValueError),
    "d_zero": (lambda f, dev: _build(f, dev, d=0), ValueError),
    "layer_index_negative": (lambda f, dev: _build(f, dev, k=-1), ValueError),
    "smallest_sizes_build_and_run": (lambda f, dev: _run(f, dev, (1, 1), n=1, d=1), None),
    "static_smallest_sizes_build_and_run": (lambda f, dev: _run(f, dev, (1, 1), n=1, d=1, dynamic=False), None),
    "H_with_too_many_streams": (lambda f, dev: _run(f, dev, (N + 1, D)), ValueError),
    "H_with_the_wrong_width": (lambda f, dev: _run(f, dev, (N, D + 1)), ValueError),
    "H_of_one_axis": (lambda f, dev: _run(f, dev, (N * D,)), ValueError),
}

# case -> the equations it exercises: a finding is listed under these alone
CHECKS = {
    "n_zero": ("hc.setup",),  # n copies of the hidden
    "n_negative": ("hc.setup",),
    "d_zero": ("hc.eq5",),  # the width every layer runs at
    "layer_index_negative": ("hc.eq14",),  # A_m = e_(k mod n) reads the layer index
    "smallest_sizes_build_and_run": ("hc.setup", "hc.eq5"),
    "static_smallest_sizes_build_and_run": ("hc.setup", "hc.eq5"),
    "H_with_too_many_streams": ("hc.eq5",),
    "H_with_the_wrong_width": ("hc.eq5",),
    "H_of_one_axis": ("hc.eq5",),
}


@pytest.mark.gate(equations=["hc.setup", "hc.eq14", "hc.eq5"], mechanism="hyper_connection")
@pytest.mark.parametrize("case", [pytest.param(case, marks=pytest.mark.gate_checks(*CHECKS[case]), id=case)
                                  for case in sorted(CASES)])
def test_each_invalid_argument_is_refused_with_the_documented_error(subject, device, case):
    """The case's call raises exactly the interface's error (or, for the smallest sizes, builds and runs)."""
    make, error = CASES[case]
    assert_behaves_as_documented(make(subject.get("hyper_connection"), device), error, case=case)
