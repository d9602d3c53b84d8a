"""Kernel gates: a fused AttnRes depth attention (Eqs. 2-4) held to the PyTorch reference's own error.

These gates run on every subject of the mechanism except the reference itself ("torch"),
which is what they measure the others against (the reference is held to the oracle by
test_attnres_depth_attention.py).

The bound (fidelity/gates/kernel_bound.py; flash-attention style, README, Design: tolerance policy):
on the same inputs, in the same dtype and on the same device,

    err(kernel) <= KERNEL_MULTIPLE * err(reference) + FLOOR_EPS * eps(dtype)

err is the worst error against the truth RELATIVE TO THE TRUE TENSOR'S SCALE (max |entry|;
h and the gradients are sums of signed terms with entries that cancel to near zero). The
truth is the oracle's fixture value where one exists, otherwise the reference computed in
float64 (for a float64 subject that truth is its reference: the bound is the floor alone).
KERNEL_MULTIPLE = 2, FLOOR_EPS = 16, as for the Sinkhorn kernel. Readings under the
interpreter: <= 1 eps on the fixtures, <= 3 eps on the random cases. The m factor of the
norm's derivative is 1/d under "paper" and 1 under L2: every convention is run.
"""
from __future__ import annotations

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import assert_bound, relative_error
from fidelity.gates.fixture_values import fixture, value
from fidelity.gates.jacobians import assert_gradcheck_criterion, jacobian_by_central_differences
from fidelity.gates.kernel_bound import assert_kernel_bounded, kernel_of
from fidelity.impl.torch import depth_attend as reference_depth_attend
from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS

MECH = "depth_attention"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]


def _reference(*args, **kw):
    return reference_depth_attend(*args, backward="autograd", **kw)


def _err(actual: torch.Tensor, truth: torch.Tensor) -> float:
    """Worst |actual - truth| relative to the truth's scale (its largest |entry|)."""
    truth = truth.detach().double().cpu()
    return float(relative_error(actual, truth, max(float(truth.abs().max()), 1e-30)).max())


def _eps(fx: str) -> float:
    raw = fixture(fx)["inputs"]["eps"]
    return float(raw["float64"]) if isinstance(raw, dict) else float(raw)


def _truth(fx: str, convention: str, field: str) -> torch.Tensor:
    return torch.tensor(fixture(fx)["expected"][convention][field]["float64"], dtype=torch.float64)


def _fixture_outputs(fn, fx, convention, dtype, device) -> dict[str, torch.Tensor]:
    inputs = fixture(fx)["inputs"]
    sources = value(fx, "sources", dtype, device).requires_grad_(True)
    query = value(fx, "query", dtype, device).requires_grad_(True)
    gain = value(fx, "gain", dtype, device) if "gain" in inputs else None
    h, alpha = fn(sources, query, convention=convention, eps=_eps(fx), gain=gain)
    out = {"alpha": alpha, "h": h}
    if "loss_weights" in inputs:
        c = value(fx, "loss_weights", dtype, device)
        out["dloss_dsource"], out["dloss_dquery"] = torch.autograd.grad((h * c).sum(), (sources, query))
    return out


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4", "attnres.phi", "attnres.score_conventions",
                             "attnres.rmsnorm_gain", "attnres.eps"], mechanism=MECH)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("fx", ["attnres.three_conventions", "attnres.general", "attnres.zero_query"])
def test_kernel_error_against_the_oracle_is_bounded_by_the_references(subject, device, dtype, fx, convention):
    """alpha, h and (attnres.general: loss = c . h, gain g) dloss/dv, dloss/dq through the backward
    kernel, against the oracle, within 2x the reference's error + 16 eps, in every convention."""
    kernel = kernel_of(subject, MECH)
    got = _fixture_outputs(kernel, fx, convention, dtype, device)
    ref = _fixture_outputs(_reference, fx, convention, dtype, device)
    for field in got:
        truth = _truth(fx, convention, field)
        assert_kernel_bounded(_err(got[field], truth), _err(ref[field], truth), dtype,
                 what=f"{field} of {fx} ({convention})", name=field)


def _random_case(L: int, positions: int, d: int, convention: str, seed: int) -> dict[str, torch.Tensor]:
    """float64 sources [L, positions, d], gain, cotangents of h and alpha, and a query scaled so that
    the scores are O(1) in each convention (the softmax neither saturated, where it is ill-conditioned,
    nor flat, where the key path and its factor m would be invisible)."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64)  # noqa: E731
    query_scale = {"paper": d ** -0.5, "l2_sqrt_d": d ** 0.5, "l2": 1.0}[convention]
    return {"sources": r(L, positions, d), "query": r(d) * query_scale, "gain": 1.0 + 0.5 * r(d),
            "dh": r(positions, d), "dalpha": r(L, positions)}


def _outputs_and_grads(fn, case, convention, dtype, device) -> dict[str, torch.Tensor]:
    leaves = [case[k].to(dtype=dtype, device=device).requires_grad_(True) for k in ("sources", "query", "gain")]
    h, alpha = fn(leaves[0], leaves[1], convention=convention, eps=1e-6, gain=leaves[2])
    loss = (h * case["dh"].to(dtype=dtype, device=device)).sum() + (alpha * case["dalpha"].to(dtype=dtype, device=device)).sum()
    dv, dq, dg = torch.autograd.grad(loss, leaves)
    return {"h": h, "alpha": alpha, "dv": dv, "dq": dq, "dg": dg}


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4", "attnres.phi", "attnres.score_conventions",
                             "attnres.rmsnorm_gain"], mechanism=MECH)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("L,d", [(3, 600), (17, 600)], ids=["L3-d600", "L17-d600"])
def test_wide_keys_and_many_sources_match_the_reference_forward_and_backward(subject, device, dtype, L, d, convention):
    """Random sources [L, 5, d] with d = 600 (several d blocks, one of them partial) and up to 17
    sources (a padded source axis), a learned gain, and cotangents on both h and alpha: h, alpha and
    dv, dq, dg through the backward kernels against the reference in float64."""
    kernel = kernel_of(subject, MECH)
    case = _random_case(L, 5, d, convention, seed=7000 + 31 * L + d)
    truth = _outputs_and_grads(_reference, case, convention, torch.float64, "cpu")
    got = _outputs_and_grads(kernel, case, convention, dtype, device)
    ref = _outputs_and_grads(_reference, case, convention, dtype, device)
    for field in truth:
        assert_kernel_bounded(_err(got[field], truth[field]), _err(ref[field], truth[field]), dtype,
                 what=f"{field} at L = {L}, d = {d} ({convention})", name=field)


# Central differences at step 1e-6 in float64: rounding ~ eps |phi| / h ~ 1e-10 of the scale, truncation
# ~ h^2 ~ 1e-12; 1e-7 leaves > 100x room and sits orders below a dropped factor or path (O(1)).
DIRECTIONAL_STEP = 1e-6
DIRECTIONAL_TOL = 1e-7


def _directional_error(f, inputs, seed: int) -> float:
    """|<v, J u> by the backward - the same by central differences|, relative to sum |grad| |u|,
    for a random direction u over all inputs and a random cotangent v over all outputs (float64)."""
    g = torch.Generator().manual_seed(seed)
    u = [torch.randn(x.shape, generator=g, dtype=torch.float64).to(x.device) for x in inputs]
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    outs = f(*leaves)
    v = [torch.randn(o.shape, generator=g, dtype=torch.float64).to(o.device) for o in outs]
    grads = torch.autograd.grad(sum((o * w).sum() for o, w in zip(outs, v)), leaves)
    analytic = sum(float((gr * d).sum()) for gr, d in zip(grads, u))
    magnitude = sum(float((gr * d).abs().sum()) for gr, d in zip(grads, u))

    def phi(sign: float) -> float:
        with torch.no_grad():
            shifted = f(*[x + sign * DIRECTIONAL_STEP * d for x, d in zip(inputs, u)])
            return sum(float((o * w).sum()) for o, w in zip(shifted, v))

    numeric = (phi(1.0) - phi(-1.0)) / (2 * DIRECTIONAL_STEP)
    return abs(analytic - numeric) / max(magnitude, 1e-300)


# gradcheck's central differences and criterion |analytic - numeric| <= atol + rtol |numeric|, with
# tolerances 100x tighter than its defaults (1e-5, 1e-3), as for the Sinkhorn kernel.
GRADCHECK_EPS, GRADCHECK_ATOL, GRADCHECK_RTOL = 1e-6, 1e-7, 1e-5


def _flat(h: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """(h [positions, d], alpha [L, positions]) -> one vector: h's entries, then alpha's."""
    return torch.cat([h.reshape(-1), alpha.reshape(-1)])


def _full_jacobians(f, sources, query, gain) -> tuple[torch.Tensor, torch.Tensor]:
    """(analytic, numeric) Jacobians of (h, alpha) w.r.t. (sources, query, gain), [outputs, inputs].

    Analytic: one backward per output element (torch's jacobian). Numeric: central differences, the
    source columns in ONE call (the 2 N shifted copies stacked on a new batch axis, which the kernel
    takes as [L, copies, ..., d]) and the query and gain columns one call each (they are shared by the
    whole batch, so they cannot be stacked). Under the interpreter this is ~40 launches, not ~100."""
    def flat_f(s, q, g):
        return _flat(*f(s, q, g))

    analytic = torch.cat([j.reshape(j.shape[0], -1) for j in
                          torch.autograd.functional.jacobian(flat_f, (sources, query, gain))], dim=1)

    def of_sources(copies):  # [K, L, ..., d] -> [K, outputs]
        h, alpha = f(copies.movedim(0, 1), query, gain)
        return torch.stack([_flat(h[k], alpha[:, k]) for k in range(copies.shape[0])])

    columns = [jacobian_by_central_differences(of_sources, sources, GRADCHECK_EPS).reshape(analytic.shape[0], -1)]
    with torch.no_grad():
        for x, shift in ((query, lambda v: (sources, v, gain)), (gain, lambda v: (sources, query, v))):
            for k in range(x.numel()):
                step = torch.zeros_like(x).reshape(-1)
                step[k] = GRADCHECK_EPS
                step = step.reshape(x.shape)
                columns.append(((flat_f(*shift(x + step)) - flat_f(*shift(x - step))) / (2 * GRADCHECK_EPS))[:, None])
    return analytic, torch.cat(columns, dim=1)


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4", "attnres.phi", "attnres.score_conventions",
                             "attnres.rmsnorm_gain"], mechanism=MECH)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
def test_backward_kernel_passes_gradcheck_in_float64(subject, device, convention):
    """float64. On sources [3, 2, 5], query and gain: the full Jacobian of (h, alpha) by the backward
    kernel against central differences, by torch.autograd.gradcheck's criterion (the reading: the worst
    ratio of |analytic - numeric| to atol + rtol |numeric|), then gradcheck itself in fast mode (its own
    projection v^T J u, independent of our code). On a wide case [17, 3, 600] that spans several d
    blocks and programs (30 000 inputs: no full Jacobian): the derivative along a random direction for a
    random cotangent, backward kernel against central differences (reading: its relative error)."""
    kernel = kernel_of(subject, MECH)

    def f(sources, query, gain):
        return kernel(sources, query, convention=convention, eps=1e-6, gain=gain)

    case = _random_case(3, 2, 5, convention, seed=8008)
    inputs = tuple(case[k].to(device) for k in ("sources", "query", "gain"))
    analytic, numeric = _full_jacobians(f, *inputs)
    assert_gradcheck_criterion(analytic, numeric, atol=GRADCHECK_ATOL, rtol=GRADCHECK_RTOL,
                               what=f"the kernel backward's Jacobian on [3, 2, 5] ({convention}) against central "
                                    "differences")
    passed = torch.autograd.gradcheck(f, tuple(x.clone().requires_grad_(True) for x in inputs), eps=GRADCHECK_EPS,
                                      atol=GRADCHECK_ATOL, rtol=GRADCHECK_RTOL, raise_exception=False, fast_mode=True)
    assert_bound(0 if passed else 1, at_most=0, reading_name="gradcheck_failures",
                 what=f"torch.autograd.gradcheck (fast mode) failures of the kernel backward on [3, 2, 5] ({convention})")
    wide = _random_case(17, 3, 600, convention, seed=8617)
    err = _directional_error(f, tuple(wide[k].to(device) for k in ("sources", "query", "gain")), seed=8618)
    assert_bound(err, at_most=DIRECTIONAL_TOL,
                 what=f"directional derivative of the kernel backward vs central differences on [17, 3, 600] "
                      f"({convention}), relative to sum |grad| |u|")
