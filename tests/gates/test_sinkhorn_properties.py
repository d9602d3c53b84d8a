"""Gates: properties of the Sinkhorn projection (mHC Eqs. 6, 9) on random logits, and closure.

Inputs: logits N(0, 6^2) at n = 2, 4, 8, 16 from a seeded torch.Generator, rounded to
float32 so that BOTH dtypes and the oracle see the same numbers. Scale 6 keeps M(20)
visibly unconverged in the column direction at every n (the oracle's column defects
are 6.6e-5 .. 3.7e-2), so rows and columns cannot be confused.

Tolerances: a row or column sum adds n entries, each rounded within a few eps of
its own value, and the sum rounds n - 1 times: (4 + n) eps relative to 1.
- Rows: the last pass of Eq. 9 is a row normalisation, so |row sum - 1| <= (4 + n) eps.
- Columns are the unconverged direction: their sums are compared with the ORACLE's
  M(20) column sums (mpmath, 60 digits, same logits), to the same (4 + n) eps.
"""
from functools import lru_cache

import mpmath
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.oracles import sinkhorn as sk_oracle
from fidelity.oracles._precision import precision
from fidelity.gates.routes import routed
from fidelity.spec.values import spec_value

DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
ROUTES = ["autograd", "manual"]
SIZES = [2, 4, 8, 16]
LOGIT_SCALE = 6.0
T_MAX = spec_value("mhc.table5.tmax")  # the paper's t_max, read from the spec


def _sinkhorn(subject, backward):
    return routed(subject, "sinkhorn", backward, gradient=False)


def sum_tolerance(n: int) -> Tolerance:
    """(4 + n) eps relative to 1: n entries within a few eps each, summed with n - 1 roundings."""
    return Tolerance(eps_multiple=4 + n, floor=1.0)


@lru_cache(maxsize=None)
def _logits64(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, n, generator=g, dtype=torch.float64) * LOGIT_SCALE).to(torch.float32).to(torch.float64)


@lru_cache(maxsize=None)
def _oracle_sums(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(row sums, column sums) of the oracle's M(20) for the same logits, as float64 tensors."""
    M = sk_oracle.sinkhorn(_logits64(n, seed).tolist(), t_max=T_MAX)
    with precision():
        rows = [float(mpmath.fsum(r)) for r in M]
        cols = [float(mpmath.fsum(M[i][j] for i in range(n))) for j in range(n)]
    return torch.tensor(rows, dtype=torch.float64), torch.tensor(cols, dtype=torch.float64)


def _seed(n: int, k: int = 0) -> int:
    return 1000 + n + 100 * k


@pytest.mark.gate(equations=["mhc.eq6", "mhc.eq9"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("n", SIZES)
def test_rows_sum_to_one_columns_sum_as_m20_and_entries_are_non_negative(subject, device, dtype, backward, n):
    """Eq. 6 membership of H_res = M(20) in both directions, and non-negativity.

    Rows: exact to (4 + n) eps after the final row pass. Columns: equal to the oracle's
    M(20) column sums (not to 1: after 20 steps they are not converged), to (4 + n) eps.
    """
    seed = _seed(n)
    H = _sinkhorn(subject, backward)(_logits64(n, seed).to(device=device, dtype=dtype), t_max=T_MAX)
    h = H.detach().to(torch.float64).cpu()
    oracle_rows, oracle_cols = _oracle_sums(n, seed)
    assert_bound(float(h.min()), at_least=0.0, what=f"smallest entry of H_res at n = {n} (Eq. 6: H >= 0)")
    assert_bound(float((h.sum(-1) - 1).abs().max()), at_most=sum_tolerance(n).rtol(dtype),
                 what=f"max|row sum - 1| at n = {n} (the last pass is a row pass)")
    assert_close(h.sum(-2), oracle_cols, sum_tolerance(n), dtype=dtype,
                 what=f"column sums at n = {n} against the oracle's M(20) column sums")


@pytest.mark.gate(equations=["mhc.eq6", "mhc.composite"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", SIZES)
def test_products_of_doubly_stochastic_outputs_stay_doubly_stochastic(subject, device, dtype, n):
    """Closure (Birkhoff polytope): H1 H2 H3 H4 of four subject outputs is non-negative, rows sum to 1,
    and its column sums are within what the factors' own column defects allow.

    1^T H1 H2 H3 H4 = (1 + c1)^T H2 H3 H4 ...: with row-stochastic non-negative factors each
    factor's column defect c_k (taken from the ORACLE's M(20)) can grow the product's by at most
    prod(1 + max|c_k|) - 1. Rounding: each of the K = 4 factors' rows within (4 + n) eps, and
    each of the 3 matmuls adds n-term sums: K (4 + 2n) eps.
    """
    sk = subject.get("sinkhorn")
    K = 4
    factors, col_defects = [], []
    for k in range(K):
        seed = _seed(n, k)
        factors.append(sk(_logits64(n, seed).to(device=device, dtype=dtype), t_max=T_MAX))
        col_defects.append(float((_oracle_sums(n, seed)[1] - 1).abs().max()))
    P = factors[0]
    for H in factors[1:]:
        P = P @ H
    p = P.detach().to(torch.float64).cpu()
    eps = torch.finfo(dtype).eps
    rounding = K * (4 + 2 * n) * eps
    growth = 1.0
    for c in col_defects:
        growth *= 1.0 + c
    assert_bound(float(p.min()), at_least=0.0, what=f"smallest entry of the product of {K} outputs at n = {n}")
    assert_bound(float((p.sum(-1) - 1).abs().max()), at_most=rounding,
                 what=f"max|row sum - 1| of the product of {K} outputs at n = {n}")
    assert_bound(float((p.sum(-2) - 1).abs().max()), at_most=(growth - 1.0) + rounding,
                 what=f"max|column sum - 1| of the product at n = {n}, against prod(1 + c_k) - 1 = {growth - 1.0:.6g}")
