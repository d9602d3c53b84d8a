"""Kernel gates: a fused Sinkhorn projection (mHC Eq. 9) held to the PyTorch reference's own error.

These gates run on every subject of the mechanism except the reference itself ("torch"),
which is what they measure the others against (the reference is held to the oracle by
test_sinkhorn_fixtures.py and test_sinkhorn_properties.py).

The bound (fidelity/gates/kernel_bound.py; flash-attention style, README, Design: tolerance policy):
on the same inputs, in the same dtype and on the same device,

    err(kernel) <= KERNEL_MULTIPLE * err(reference) + FLOOR_EPS * eps(dtype)

where err is the worst relative error against the truth: the oracle's 40-digit fixture value
where one exists, otherwise the reference computed in float64 (for a float64 subject that
truth IS its reference, so the bound is the floor alone).
KERNEL_MULTIPLE = 2: a fused kernel may round differently (sum order, exp/log library), not
worse by more than a factor 2. FLOOR_EPS = 16: where the reference happens to be exact (it is
on the 2x2 cross-ratio case in float32) a kernel may still be a few ulp off. Readings under
the interpreter: kernel <= 12 eps where the reference reads <= 20 eps (fixtures), <= 2.7 eps
on random inputs; every perturbation of the kernels moves a reading by >= 1e-3 (> 8000 eps).
"""
from __future__ import annotations

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_bound, assert_close, relative_error
from fidelity.gates.fixture_values import expected, param, value
from fidelity.gates.jacobians import assert_gradcheck_criterion, jacobian_by_backward, jacobian_by_central_differences
from fidelity.gates.kernel_bound import assert_kernel_bounded, kernel_of
from fidelity.impl.torch import sinkhorn as reference_sinkhorn
from fidelity.spec.values import spec_value

MECH = "sinkhorn"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
T_MAX = spec_value("mhc.table5.tmax")  # the paper's t_max, read from the spec
EQ9_FIXTURES = ["sinkhorn.cross_ratio_2x2", "sinkhorn.slow_2x2", "sinkhorn.exact_limit_n3", "sinkhorn.exact_limit_n4"]
EXTREME = [("logits_plus200", "M_plus200"), ("logits_minus200", "M_minus200"), ("logits_row_minus400", "M_row_minus400")]


def _kernel(subject):
    kernel = kernel_of(subject, MECH)
    return lambda logits, t_max=T_MAX: kernel(logits, t_max=t_max)


def _err(actual: torch.Tensor, truth: torch.Tensor, floor: float = 1e-30) -> float:
    return float(relative_error(actual, truth, floor).max())


def _random(n: int, batch: tuple[int, ...], seed: int, scale: float = 6.0):
    """Logits N(0, scale^2) (M(20) still unconverged at scale 6) and a cotangent N(0, 1), float64."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(*batch, n, n, generator=g, dtype=torch.float64) * scale
    cotangent = torch.randn(*batch, n, n, generator=g, dtype=torch.float64)
    return logits, cotangent


@pytest.mark.gate(equations=["mhc.eq9"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("fx", EQ9_FIXTURES)
def test_kernel_error_against_the_oracle_is_bounded_by_the_references(subject, device, dtype, fx):
    """M(t_max) of each Eq. 9 fixture (2x2 cross ratio, the slow 2x2, exact limits at n = 3, 4):
    the kernel's worst relative error against the oracle within 2x the reference's + 16 eps."""
    kernel = _kernel(subject)
    logits = value(fx, "logits", dtype, device)
    t_max = param(fx, "t_max")
    truth = expected(fx, "M_t_max", torch.float64)
    assert_kernel_bounded(_err(kernel(logits, t_max), truth), _err(reference_sinkhorn(logits, t_max=t_max), truth), dtype,
             what=f"M({t_max}) of {fx}", name="M")


@pytest.mark.gate(equations=["mhc.eq9", "mhc.eq6"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", [c for c, _ in EXTREME])
def test_extreme_logits_give_finite_doubly_stochastic_output_with_no_floor(subject, device, dtype, case):
    """sinkhorn.extreme_offsets: rank-one logits a_i + b_j + offset (cross ratio 1) at offsets +200,
    -200, and a row at -400. M(t) = J/3 for every t >= 1 in exact arithmetic. A linear-domain
    iteration overflows (+200 in float32: nan) or hits its floor (-200 and -400: the predicted
    readings of the fixture); the log domain has neither. The output must be finite, equal J/3
    within the kernel bound, and its rows AND columns sum to 1 (the limit is reached exactly);
    its gradient for a random cotangent must be finite too."""
    kernel = _kernel(subject)
    fx = "sinkhorn.extreme_offsets"
    field = dict(EXTREME)[case]
    logits = value(fx, case, dtype, device)
    truth = expected(fx, field, torch.float64)
    leaf = logits.clone().requires_grad_(True)
    out = kernel(leaf)
    finite = bool(torch.isfinite(out).all())
    assert_bound(0.0 if finite else 1.0, at_most=0.0, reading_name="non_finite",
                 what=f"non-finite entries in M(20) at {case} (1 = some)")
    assert_kernel_bounded(_err(out, truth), _err(reference_sinkhorn(logits, t_max=T_MAX), truth), dtype,
             what=f"M(20) = J/3 at {case}", name="M")
    n = logits.shape[-1]
    sums = Tolerance(eps_multiple=4 + n, floor=1.0)  # n entries within a few eps each, n - 1 roundings
    ones = torch.ones(n, dtype=torch.float64)
    assert_close(out.detach().double().sum(-1).cpu(), ones, sums, dtype=dtype, what=f"row sums at {case}")
    assert_close(out.detach().double().sum(-2).cpu(), ones, sums, dtype=dtype, what=f"column sums at {case}")
    g = torch.Generator().manual_seed(7)
    cot = torch.randn(n, n, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)
    (grad,) = torch.autograd.grad((out * cot).sum(), leaf)
    finite = bool(torch.isfinite(grad).all())
    assert_bound(0.0 if finite else 1.0, at_most=0.0, reading_name="non_finite_gradient",
                 what=f"non-finite entries in the gradient at {case} (1 = some)")


@pytest.mark.gate(equations=["mhc.eq9"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", [3, 4, 8, 16])
def test_backward_kernel_matches_autograd_of_the_reference(subject, device, dtype, n):
    """d <C, SK(L)> / dL through the kernel's hand-written backward against torch autograd of the
    reference forward, for 5 random unconverged matrices (n = 3 exercises the padded tile), relative
    to the gradient's scale max|g|: the truth is autograd of the reference in float64."""
    kernel = _kernel(subject)
    logits64, cot64 = _random(n, (5,), seed=4000 + n)
    truth_leaf = logits64.clone().requires_grad_(True)
    (reference_sinkhorn(truth_leaf, t_max=T_MAX, backward="autograd") * cot64).sum().backward()
    truth = truth_leaf.grad
    scale = float(truth.abs().max())
    grads = {}
    for name, fn in (("kernel", kernel), ("reference", lambda x: reference_sinkhorn(x, t_max=T_MAX, backward="autograd"))):
        leaf = logits64.to(dtype=dtype, device=device).requires_grad_(True)
        (fn(leaf) * cot64.to(dtype=dtype, device=device)).sum().backward()
        grads[name] = leaf.grad
    assert_kernel_bounded(_err(grads["kernel"], truth, scale), _err(grads["reference"], truth, scale), dtype,
             what=f"dL/dlogits at n = {n}, relative to max|g| = {scale:.3g}", name="grad")


# gradcheck's central differences and criterion |analytic - numeric| <= atol + rtol |numeric|, with
# tolerances 100x tighter than its defaults (1e-5, 1e-3): float64 central differences at 1e-6 are good
# to ~1e-10 of the scale here, and a wrong adjoint is off by O(1e-3) or more.
GRADCHECK_EPS, GRADCHECK_ATOL, GRADCHECK_RTOL = 1e-6, 1e-7, 1e-5


@pytest.mark.gate(equations=["mhc.eq9"], mechanism=MECH)
@pytest.mark.parametrize("n", [3, 4])
def test_backward_kernel_passes_gradcheck_in_float64(subject, device, n):
    """The kernel backward's full Jacobian against central differences on random unconverged logits,
    float64, by torch.autograd.gradcheck's criterion (the reading: the worst ratio of |analytic -
    numeric| to atol + rtol |numeric|); both Jacobians from one batched call each, then gradcheck
    itself in fast mode (its own projection v^T J u, independent of our code)."""
    kernel = _kernel(subject)
    logits, _ = _random(n, (), seed=5000 + n)
    x = logits.to(device)
    assert_gradcheck_criterion(jacobian_by_backward(kernel, x),
                               jacobian_by_central_differences(kernel, x, GRADCHECK_EPS),
                               atol=GRADCHECK_ATOL, rtol=GRADCHECK_RTOL,
                               what=f"the kernel backward's Jacobian at n = {n} against central differences")
    passed = torch.autograd.gradcheck(kernel, (x.clone().requires_grad_(True),), eps=GRADCHECK_EPS,
                                      atol=GRADCHECK_ATOL, rtol=GRADCHECK_RTOL, raise_exception=False, fast_mode=True)
    assert_bound(0 if passed else 1, at_most=0, reading_name="gradcheck_failures",
                 what=f"torch.autograd.gradcheck (fast mode) failures of the kernel backward at n = {n}")


@pytest.mark.gate(equations=["mhc.eq9", "mhc.eq6"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_many_matrices_in_one_call_are_projected_independently(subject, device, dtype):
    """[3, 500, 3, 3] logits: 1500 matrices at n = 3, so a program holds many matrices, tiles are
    padded, and the call spans several programs. Each matrix must come out as the reference's
    (truth: the reference in float64), relative to the entry scale 1/n of a doubly stochastic
    matrix; and the first matrix of the batch must equal the same matrix projected alone."""
    kernel = _kernel(subject)
    logits64, _ = _random(3, (3, 500), seed=6000)
    truth = reference_sinkhorn(logits64, t_max=T_MAX)
    logits = logits64.to(dtype=dtype, device=device)
    batched = kernel(logits)
    floor = 1.0 / 3
    assert_kernel_bounded(_err(batched, truth, floor), _err(reference_sinkhorn(logits, t_max=T_MAX), truth, floor), dtype,
             what="1500 matrices in one call", name="M")
    alone = kernel(logits[1, 7].clone())
    assert_kernel_bounded(_err(batched[1, 7], alone.double().cpu(), floor), 0.0, dtype,
             what="matrix [1, 7] in the batch against the same matrix projected alone", name="alone")
