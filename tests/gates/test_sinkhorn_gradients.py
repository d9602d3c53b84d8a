"""Gates: the Sinkhorn projection's gradients (mHC Eq. 9, backward routes "autograd" and "manual").

Inputs are NON-constant on purpose: logits N(0, 6^2) and a random cotangent N(0, 1) from a
seeded torch.Generator. (A constant cotangent is legitimately useless here: sum(M) = n for
every row-stochastic M, so d sum(M) / d logits = 0 and a gradient gate on it is green for the
wrong reason.) The logit scale matters too: at N(0, 1) logits M(20) has converged to 1e-15,
the 40 alternating adjoint steps then compose to the same projection whichever axis each one
sums over, and an adjoint on the wrong axis reads 1e-10 .. 1e-16 relative (measured). At scale
6, M(20) is still unconverged (column defects 1e-4 .. 4e-2) and the same defect reads 7e-3 at
n = 4, 0.09 at n = 8, 0.12 at n = 16. At n = 2 it is invisible at any scale (measured 0: the
2x2 adjoint is the same along either axis), which is why n = 4, 8, 16 are in the list.

Tolerances are RELATIVE to the gradient's own scale (max|g| or max|J|), never absolute,
so the verdict does not depend on n (source 004 section 4.2: an absolute 1e-3 on
dL/dlogits fails at one n and passes at another for the same kernel).
"""
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.jacobians import jacobian_by_backward, jacobian_by_central_differences
from fidelity.gates.routes import routed
from fidelity.spec.values import spec_value

SIZES = [2, 4, 8, 16]
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
T_MAX = spec_value("mhc.table5.tmax")  # the paper's t_max, read from the spec
# manual vs autograd of the same forward: the same 40 normalisations, adjoint summed in another
# order; 64 eps of max|g| covers the reordering with room (measured: 0 eps on the torch subject).
ROUTE_AGREEMENT_EPS = 64
# Central differences at h = 1e-6 in float64: error ~ eps max|M| / (h max|J|) + h^2 |f'''| ~ 1e-9
# relative to max|J| (measured 3e-10 .. 2.2e-9); 2^32 eps = 9.5e-7 leaves ~500x room and is
# still >= 7000x below an adjoint on the wrong axis (>= 7e-3 at n >= 4) or a detached normaliser (0.4).
FD_STEP = 1e-6
FD_EPS_MULTIPLE = 2 ** 32


def _route(subject, backward):
    fn = routed(subject, "sinkhorn", backward, gradient=True)
    return lambda logits: fn(logits, t_max=T_MAX)


LOGIT_SCALE = 6.0


def _inputs(n: int, device, dtype):
    g = torch.Generator().manual_seed(3000 + n)
    logits = torch.randn(n, n, generator=g, dtype=torch.float64) * LOGIT_SCALE
    cotangent = torch.randn(n, n, generator=g, dtype=torch.float64)
    return logits.to(device=device, dtype=dtype), cotangent.to(device=device, dtype=dtype)


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", SIZES)
def test_manual_backward_matches_autograd_of_the_same_forward(subject, device, dtype, n):
    """The hand-written unrolled adjoint against torch autograd through the same log-domain forward.

    g = d <C, SK(L)> / dL for a random cotangent C, by both routes; relative to max|g_autograd|.
    """
    manual, auto = _route(subject, "manual"), _route(subject, "autograd")
    logits, cot = _inputs(n, device, dtype)
    grads = {}
    for name, fn in (("autograd", auto), ("manual", manual)):
        x = logits.clone().requires_grad_(True)
        (fn(x) * cot).sum().backward()
        grads[name] = x.grad.detach()
    scale = float(grads["autograd"].abs().max())
    if not scale > 0:
        raise ValueError(f"n = {n}: the autograd gradient is zero; the input is degenerate, not the subject")
    tol = Tolerance(eps_multiple=ROUTE_AGREEMENT_EPS, floor=scale)
    assert_close(grads["manual"], grads["autograd"], tol,
                 what=f"manual adjoint vs autograd, n = {n}, relative to max|g| = {scale:.3g}")


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn", gate_class="gradients_finite_differences")
@pytest.mark.parametrize("backward", ["autograd", "manual"])
@pytest.mark.parametrize("n", SIZES)
def test_jacobian_matches_central_differences_in_float64(subject, device, backward, n):
    """The route's full Jacobian dSK(L)/dL against central differences, both in float64, element by
    element with a tolerance relative to max|J| (atol = rtol max|J|), so n does not decide; then
    torch.autograd.gradcheck's own verdict on the same input.

    Both Jacobians are built from batched calls (fidelity/gates/jacobians.py: n^2 rows, 2 n^2
    differences, one call each) because under the Triton CPU interpreter n^2 separate launches at
    n = 16 took ~50 s of this gate. The
    full-Jacobian comparison above is the per-element check gradcheck's slow mode makes (same
    central differences, same step, a tolerance at least as tight), so gradcheck runs in its fast
    mode: torch's own projection v^T J u, as a second opinion that does not share our code.
    """
    fn = _route(subject, backward)
    logits, _ = _inputs(n, device, torch.float64)
    J = jacobian_by_backward(fn, logits)
    J_fd = jacobian_by_central_differences(fn, logits, FD_STEP)
    scale = float(J_fd.abs().max())
    if not scale > 0:
        raise ValueError(f"n = {n}: the finite-difference Jacobian is zero; the input is degenerate")
    tol = Tolerance(eps_multiple=FD_EPS_MULTIPLE, floor=scale)
    assert_close(J, J_fd, tol, what=f"{backward} Jacobian vs central differences, n = {n}, "
                                    f"relative to max|J| = {scale:.3g}")
    rtol = tol.rtol(torch.float64)
    x = logits.clone().requires_grad_(True)
    passed = torch.autograd.gradcheck(fn, (x,), eps=FD_STEP, atol=rtol * scale, rtol=rtol, raise_exception=False,
                                      fast_mode=True)
    assert_bound(0 if passed else 1, at_most=0, reading_name="gradcheck_failures",
                 what=f"torch.autograd.gradcheck, fast mode ({backward}, n = {n}, atol = {rtol * scale:.3g}, "
                      f"rtol = {rtol:.3g}) failures")
