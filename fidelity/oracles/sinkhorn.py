"""Sinkhorn-Knopp exactly as mHC (arXiv:2512.24880) Eq. 9 prints it, and its exactly known limits.

    M(0) = exp(logits);  M(t) = T_r(T_c(M(t-1)))  (column normalisation first, then row);
    H_res = M(t_max), t_max = Table 5's (the spec's mhc.table5.tmax).

`sinkhorn` is the iteration in mpmath at the shared working precision. The
limits are exact (sympy) where they exist:
- 2x2: both normalisations are diagonal scalings, so the cross ratio
  rho = M00 M11 / (M01 M10) is preserved; the doubly stochastic limit is
  [[p, 1-p], [1-p, p]] with (p/(1-p))^2 = rho, p = sqrt(rho)/(1+sqrt(rho));
- logits = log(D1 A D2) with A doubly stochastic and positive: the limit is A
  (the doubly stochastic diagonal scaling of a positive matrix is unique);
- logits = a_i + b_j (cross ratios 1, rank one): after one column
  normalisation every column is equal, after the row normalisation M = J/n
  exactly, whatever the offset;
- b_res = c I: symmetric with equal row sums, so one column normalisation
  already gives a doubly stochastic matrix (`constant_diagonal`);
- composites H^T of such a matrix: eigenvalues 1 and lambda2 = diag - off
  ((n-1)-fold), H^T = J/n + lambda2^T (I - J/n) (`composite`).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import mpmath
import sympy

from ._precision import exact, mp, precision

TABLE5_T_MAX = "mhc.table5.tmax"  # the spec item whose `value:` is the paper's t_max


def table5_t_max() -> int:
    """Table 5's t_max, as the spec states it (its `value:`): typed once, there."""
    from fidelity.spec.values import spec_value

    return int(spec_value(TABLE5_T_MAX))


def __getattr__(name: str):
    if name == "T_MAX":  # sk.T_MAX reads the spec when first asked, not when the oracle is imported
        return table5_t_max()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def col_normalise(M: list[list]) -> list[list]:
    """T_c: divide every column by its sum."""
    n, k = len(M), len(M[0])
    sums = [mpmath.fsum(M[i][j] for i in range(n)) for j in range(k)]
    return [[M[i][j] / sums[j] for j in range(k)] for i in range(n)]


def row_normalise(M: list[list]) -> list[list]:
    """T_r: divide every row by its sum."""
    return [[x / s for x in row] for row, s in ((row, mpmath.fsum(row)) for row in M)]


def sinkhorn(logits: Sequence[Sequence], t_max: int | None = None, trajectory: bool = False):
    """Eq. 9: M(t_max) as a list of mpf rows (t_max: Table 5's unless given); with trajectory=True,
    [M(0), ..., M(t_max)]."""
    t_max = table5_t_max() if t_max is None else t_max
    if t_max < 0:
        raise ValueError("t_max must be >= 0")
    with precision():
        return sinkhorn_mpf([[mp(x) for x in row] for row in logits], t_max, trajectory)


def sinkhorn_mpf(logits: Sequence[Sequence[mpmath.mpf]], t_max: int | None = None, trajectory: bool = False):
    """Eq. 9 on logits that are already mpf, at the CALLER's precision (no `precision()` inside).

    `sinkhorn` is this at the shared precision; fidelity.oracles.derivatives differentiates it at
    a higher one (a nested `precision()` would cut the working digits back to DPS)."""
    t_max = table5_t_max() if t_max is None else t_max
    if t_max < 0:
        raise ValueError("t_max must be >= 0")
    M = [[mpmath.exp(x) for x in row] for row in logits]
    traj = [M]
    for _ in range(t_max):
        M = row_normalise(col_normalise(M))
        traj.append(M)
    return traj if trajectory else M


def exp_matrix(logits: Sequence[Sequence]) -> sympy.Matrix:
    """M(0) = exp(logits), exact."""
    return sympy.Matrix([[sympy.exp(exact(x)) for x in row] for row in logits])


def cross_ratio(M) -> sympy.Expr:
    """rho = M00 M11 / (M01 M10) of a 2x2 matrix, exact."""
    M = sympy.Matrix(M)
    if M.shape != (2, 2):
        raise ValueError("the cross ratio is defined here for 2x2 matrices")
    return sympy.simplify(M[0, 0] * M[1, 1] / (M[0, 1] * M[1, 0]))


def limit_2x2(logits: Sequence[Sequence]) -> sympy.Matrix:
    """The doubly stochastic limit [[p, 1-p], [1-p, p]], p = sqrt(rho)/(1+sqrt(rho)), exact."""
    rho = cross_ratio(exp_matrix(logits))
    r = sympy.sqrt(rho)
    p = sympy.radsimp(r / (1 + r))
    return sympy.Matrix([[p, 1 - p], [1 - p, p]])


def scaled_logits(A: Sequence[Sequence], d1: Sequence, d2: Sequence) -> list[list[sympy.Expr]]:
    """logits = log(D1 A D2) entrywise (A positive); the Sinkhorn limit of exp of these is A when A is doubly stochastic."""
    A = [[exact(x) for x in row] for row in A]
    n = len(A)
    if any(len(row) != n for row in A):
        raise ValueError("A must be square")
    for i in range(n):
        if sum(A[i]) != 1 or sum(A[j][i] for j in range(n)) != 1:
            raise ValueError("A must be doubly stochastic")
        if any(x <= 0 for x in A[i]):
            raise ValueError("A must be strictly positive (finite logits)")
    return [[sympy.log(exact(d1[i]) * A[i][j] * exact(d2[j])) for j in range(n)] for i in range(n)]


def rank_one_logits(a: Sequence, b: Sequence, offset=0) -> list[list[sympy.Expr]]:
    """logits_ij = a_i + b_j + offset: every cross ratio is 1 and the limit is J/n exactly."""
    return [[exact(ai) + exact(bj) + exact(offset) for bj in b] for ai in a]


@lru_cache(maxsize=None)
def constant_diagonal(n: int, diag_logit, off_logit=0) -> dict:
    """b_res = diag_logit on the diagonal, off_logit elsewhere: the exact H after one column normalisation.

    M(0) has diagonal e^a, off-diagonal e^b and equal row and column sums, so T_c
    gives diag = e^a/(e^a + (n-1)e^b), off = e^b/(e^a + (n-1)e^b), already doubly
    stochastic; every later step is the identity. Returns exact sympy values:
    diag, off, the matrix, lambda2 = diag - off, and
    max|H - I| = max(1 - diag, off) = 1 - diag = (n-1) e^b / (e^a + (n-1) e^b) for n >= 2
    (1 - diag = (n-1) off >= off).
    """
    if n < 2:
        raise ValueError("n >= 2 (at n = 1 the Sinkhorn output is the scalar 1)")
    a, b = sympy.exp(exact(diag_logit)), sympy.exp(exact(off_logit))
    den = a + (n - 1) * b
    diag, off = a / den, b / den
    H = sympy.ImmutableMatrix(n, n, lambda i, j: diag if i == j else off)
    return {"diag": diag, "off": off, "H": H, "lambda2": (a - b) / den,
            "identity_distance": (n - 1) * b / den}


def composite(n: int, diag_logit, off_logit, T: int) -> dict:
    """H^T for the constant-diagonal H, exact: H^T = J/n + lambda2^T (I - J/n).

    Returns lambda2, the matrix H^T, the spectral distance ||H^T - J/n||_2 = |lambda2|^T
    and the off-diagonal mass sum_{i != j} (H^T)_ij = (n-1)(1 - lambda2^T).
    """
    lam = constant_diagonal(n, diag_logit, off_logit)["lambda2"]
    lt = lam**T
    HT = sympy.Matrix(n, n, lambda i, j: sympy.Rational(1, n) + lt * ((1 if i == j else 0) - sympy.Rational(1, n)))
    return {"lambda2": lam, "H_T": HT, "distance": sympy.Abs(lt), "offdiag": (n - 1) * (1 - lt)}


def max_abs_diff(A, B) -> mpmath.mpf:
    """max |A_ij - B_ij| of two same-shaped matrices, in mpmath."""
    with precision():
        return max(abs(mp(a) - mp(b)) for ra, rb in zip(A, B) for a, b in zip(ra, rb))


def row_col_defects(M) -> dict:
    """max |row sum - 1| and max |column sum - 1| (Eq. 6 membership), in mpmath."""
    with precision():
        M = [[mp(x) for x in row] for row in M]
        rows = max(abs(mpmath.fsum(r) - 1) for r in M)
        cols = max(abs(mpmath.fsum(M[i][j] for i in range(len(M))) - 1) for j in range(len(M[0])))
        return {"row": rows, "col": cols}
