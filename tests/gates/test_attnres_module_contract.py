"""Gates: the Block AttnRes factory and forward refuse what the interface says they refuse, each case an instance.

Issue 13: fidelity discover --module fidelity.impl.torch.attnres left BlockAttnRes's guards unheld:
with `if L < 1` moved to `L <= 1` or `L < 2` a single sublayer was refused; with the num_blocks
guard removed, its `or` made `and` or its `1 <=` made `0 <=`, num_blocks = 0 divided by zero and a
float num_blocks built a module; with the mode guard removed (constructor, or forward's
`mode='unknown'`) an unknown mode ran as 'direct'; with the backward guard removed an unknown
route built. The interface (fidelity show mechanism:block_attnres, BlockAttnResFactory):
"ValueError for num_blocks outside [1, L] or not giving exactly N blocks of S, an unknown
convention, mode or route"; forward's mode is 'direct' or 'two_phase' (BlockAttnResModule.forward)
and the reference refuses another with ValueError, as its constructor does. No sublayers means
L = 0, so every num_blocks is outside [1, L]. The smallest stacks (L = 1, N = 1; L = 2, N = 1 and
N = 2) must build and run in both modes.

Reading `as_documented`: 1 when the case behaved as the interface says, 0 otherwise (the message
names what happened instead). No gate class: a refusal is none of GATE_CLASSES' promises (as
the other *_module_contract.py guard gates).
"""
import pytest
import torch

from fidelity.gates.refusals import assert_behaves_as_documented

MECH = "block_attnres"
D = 3
MODES = ("direct", "two_phase")


def _sublayers(L: int):
    return [lambda h, k=k: (k + 1) / 4 * h for k in range(L)]


def _build(factory, device, L=2, N=1, **kwargs):
    return lambda: factory(_sublayers(L), D, N, dtype=torch.float64, device=device, **kwargs)


def _run(factory, device, L, N, forward_modes=MODES):
    def run():
        module = factory(_sublayers(L), D, N, dtype=torch.float64, device=device)
        h1 = torch.ones(2, D, dtype=torch.float64, device=device)
        return [module(h1, mode=mode) for mode in forward_modes]
    return run


# case -> (the call, the error the interface names, or None when it must build and run)
CASES = {
    "no_sublayers": (lambda f, dev: _build(f, dev, L=0, N=1), ValueError),
    "num_blocks_zero": (lambda f, dev: _build(f, dev, L=2, N=0), ValueError),
    "num_blocks_above_L": (lambda f, dev: _build(f, dev, L=2, N=3), ValueError),
    "num_blocks_not_an_int": (lambda f, dev: _build(f, dev, L=2, N=2.0), ValueError),
    "num_blocks_leaving_a_block_empty": (lambda f, dev: _build(f, dev, L=4, N=3), ValueError),  # S = 2: 2 blocks
    "unknown_mode": (lambda f, dev: _build(f, dev, mode="unknown"), ValueError),
    "unknown_backward": (lambda f, dev: _build(f, dev, backward="unknown"), ValueError),
    "unknown_convention": (lambda f, dev: _build(f, dev, convention="unknown"), ValueError),
    "forward_with_an_unknown_mode": (lambda f, dev: _run(f, dev, 2, 1, forward_modes=("unknown",)), ValueError),
    "one_sublayer_one_block_builds_and_runs": (lambda f, dev: _run(f, dev, 1, 1), None),
    "two_sublayers_one_block_builds_and_runs": (lambda f, dev: _run(f, dev, 2, 1), None),
    "two_sublayers_two_blocks_builds_and_runs": (lambda f, dev: _run(f, dev, 2, 2), None),
}


@pytest.mark.gate(equations=["attnres.eq5", "attnres.eq6", "attnres.block_limits", "attnres.alg1",
                             "attnres.score_conventions"], mechanism=MECH)
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_invalid_argument_is_refused_with_the_documented_error(subject, device, case):
    """The case's call raises exactly the interface's error (or, for the smallest stacks, builds and runs)."""
    make, error = CASES[case]
    assert_behaves_as_documented(make(subject.get(MECH), device), error, case=case)
