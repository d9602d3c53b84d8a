"""Gate: Block AttnRes stays finite and exact where the scores spread far beyond exp's range (Alg. 1's max shift).

Issue 13: fidelity discover --module fidelity.impl.torch.attnres found `m = scores.amax(dim=0)` in
attn_with_stats replaceable by `scores.amin(dim=0)` with every gate green: in exact arithmetic the
online-softmax merge is invariant to the shift, but e^{s - min s} overflows once the scores spread
by more than ln(max float) (88.7 in float32, 709.8 in float64). Alg. 1 takes m = max so that every
e^{s - m} <= 1.

The case: the module case of attnres.module_alive (L = 5 affine sublayers, N = 2 blocks [1, 2, 3],
[4, 5], d = 4, two positions, learned gains) with its queries x 1024 (fixture attnres.module_trace,
inputs.stability_queries, dyadic). Block 2's inter-block scores [b_0, b_1] (Alg. 1's phase 1) then
spread by 2979 and 970 at the two positions (params.stability_phase1_spread), beyond float64's
exp range and float32's; every aggregation's top score gap is >= 534 (each alpha is one-hot to
e^-534). expected.stability_out is the oracle's h_out there (stack_forward at 60 digits). A
non-finite output is an infinite error (fidelity.gates.compare.assert_close).

Tolerance: each element of h_out relative to max |h_out| (the floor, as the oracle gradient gate),
16 eps of the dtype: h_out is a mixture of the three block sums, each a few affine layers of the
one-hot mixtures, a handful of roundings. Readings on the torch reference (CPU): float32 0.58 eps,
float64 0.61 eps, both modes alike.
"""
from __future__ import annotations

import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import expected, fixture, param, value
from fidelity.subjects.subject import NotRun

MECH = "block_attnres"
FX = "attnres.module_trace"
MODES = ["direct", "two_phase"]
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
PARAMETERS = ("queries", "output_query", "gains", "output_gain")
STABILITY_EPS_MULTIPLE = 16  # measured 0.58 eps (f32), 0.61 eps (f64), relative to max |h_out|


@pytest.mark.gate(equations=["attnres.alg1", "attnres.eq2", "attnres.eq5", "attnres.eq6"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_scores_spread_past_exps_range_give_the_oracles_finite_output(subject, device, mode, dtype):
    spread = min(param(FX, "stability_phase1_spread"))
    overflow = fixture(FX)["params"]["exp_overflow"]["float64"]
    if not spread > overflow:
        raise ValueError(f"{FX}: the stability case's phase-1 spread {spread:.4g} is within float64's exp range "
                         f"({overflow:.4g}): a weak case, regenerate it")
    W, c = value(FX, "W", dtype, device), value(FX, "c", dtype, device)
    subs = [lambda h, W=W[l], c=c[l]: h @ W.T + c for l in range(W.shape[0])]
    module = subject.get(MECH)(subs, W.shape[-1], int(fixture(FX)["inputs"]["num_blocks"]),
                               convention=param(FX, "convention"), eps=float(param(FX, "eps")["float64"]),
                               learned_gain=True, mode=mode, dtype=dtype, device=device)
    params = dict(module.named_parameters())
    for name in PARAMETERS:
        if name not in params:
            raise NotRun(f"the module has no parameter {name!r} (learned_gain=True)")
        with torch.no_grad():
            params[name].copy_(value(FX, "stability_queries" if name == "queries" else name, dtype, device))
    h1 = value(FX, "h1", dtype, device)
    with torch.no_grad():
        h_out = module(h1, mode=mode)
    want = expected(FX, "stability_out", torch.float64, device)
    scale = float(want.abs().max())
    assert_close(h_out, want, Tolerance(eps_multiple=STABILITY_EPS_MULTIPLE, floor=scale), dtype=dtype,
                 what=f"h_out at queries x {param(FX, 'stability_scale')} (phase-1 score spread >= {spread:.4g}; "
                      f"{mode}, {dtype}) against the oracle's, relative to max|h_out| = {scale:.3g}")
