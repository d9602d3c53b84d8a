"""Gate: the inputs Eq. 9 does not define are refused (the sinkhorn mechanism's contract).

M(t) is defined for square logits [..., n, n] and t_max >= 0 steps; anything else has no
meaning in the paper, so a subject must refuse it with ValueError rather than return a
number (fidelity discover found that no gate held a subject to this: a guard removed, or
its `or` turned into `and`, passed every other gate). t_max = 0 is defined: M(0) = exp(logits).
It has a gate of its own, so a subject that cannot run that valid edge case (NotRun) loses that
case alone, and its refusals are still checked (issue 51).
"""
import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.routes import routed

ROUTES = ["autograd", "manual"]
NOT_SQUARE = [(3,), (2, 3), (4, 2, 3), (3, 2)]


def _not_refused(fn, logits, **kw) -> str | None:
    """None when the call raised ValueError; else what it did instead (returned, or raised another error)."""
    try:
        fn(logits, **kw)
    except ValueError:
        return None
    except NotImplementedError:  # NotRun is not run; a bare NotImplementedError is the subject's error
        raise
    except Exception as exc:  # an IndexError deep inside is no refusal: the contract names ValueError
        return f"raised {type(exc).__name__}: {exc}"
    return "returned a result"


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn")
@pytest.mark.parametrize("backward", ROUTES)
def test_logits_that_are_not_square_matrices_and_a_negative_t_max_are_refused(subject, device, backward):
    sinkhorn = routed(subject, "sinkhorn", backward, gradient=False)
    wrong = {shape: _not_refused(sinkhorn, torch.zeros(shape, dtype=torch.float64, device=device))
             for shape in NOT_SQUARE}
    square = torch.zeros(2, 2, dtype=torch.float64, device=device)
    wrong["t_max = -1"] = _not_refused(sinkhorn, square, t_max=-1)
    accepted = {case: did for case, did in wrong.items() if did is not None}
    readings.record(len(accepted))  # inputs outside Eq. 9 that were not refused (0 passes)
    assert not accepted, f"inputs Eq. 9 does not define were not refused with ValueError: {accepted}"


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn")
@pytest.mark.parametrize("backward", ROUTES)
def test_t_max_0_is_run_not_refused_and_is_exp_of_the_logits(subject, device, backward):
    """The valid edge case beside the refusals: t_max = 0 steps is M(0) = exp(logits) = 1 at zero logits."""
    sinkhorn = routed(subject, "sinkhorn", backward, gradient=False)
    square = torch.zeros(2, 2, dtype=torch.float64, device=device)
    try:
        m0 = sinkhorn(square, t_max=0)
    except ValueError as exc:  # a guard that refuses t_max = 0 refuses an input Eq. 9 defines
        raise AssertionError(f"t_max = 0 is defined (M(0) = exp(logits)) but was refused: ValueError: {exc}") from None
    assert torch.equal(m0, torch.ones_like(square)), f"t_max = 0 must be M(0) = exp(0) = 1, got {m0.tolist()}"
