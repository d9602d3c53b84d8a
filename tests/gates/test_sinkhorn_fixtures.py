"""Gates: Sinkhorn-Knopp (mHC Eq. 9) against the oracle's fixtures.

Tolerances (relative, a multiple of the compared dtype's epsilon, beside each gate):
the log-domain iteration does 2 t_max = 40 normalisations, each a logsumexp and a
subtraction; 64 eps bounds their accumulated rounding with room, and stays far below
every predicted defect (separations are asserted in test_separations_are_strong).
"""
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close, separation
from fidelity.gates.fixture_values import expected, param, predicted, value

DTYPES = [torch.float32, torch.float64]
SINKHORN_TOL = Tolerance(eps_multiple=64, floor=1e-30)


@pytest.mark.gate(equations=["mhc.eq9", "mhc.eq6"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("backward", ["autograd", "manual"])
def test_two_by_two_matches_eq9_after_t_max_steps(subject, device, dtype, backward):
    """The 2x2 case whose limit is fixed by the cross ratio: M(20) of Eq. 9, column then row."""
    fx = "sinkhorn.cross_ratio_2x2"
    logits = value(fx, "logits", dtype, device)
    got = subject.get("sinkhorn")(logits, t_max=param(fx, "t_max"), backward=backward)
    assert_close(got, expected(fx, "M_t_max", dtype, device), SINKHORN_TOL, what="M(t_max) of the 2x2 case")
