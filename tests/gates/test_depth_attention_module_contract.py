"""Gates: the reference DepthAttention module as its constructor builds it: defaults, guards, gradients, dtype and device.

fidelity discover --module fidelity.impl.torch.depth_attention found 16 blind spots, all in the
`DepthAttention` class (exported by fidelity.impl.torch; the `depth_attend` function, which the
depth_attention mechanism is, is gated elsewhere): no gate constructed it. So the default eps
(1e-5, 1e-7, 0, 1, -1e-6 in place of 1e-6), the default learned_gain (True), the default dtype
(float16), the `d < 1` guard (removed, or moved to d <= 1, d < 2, d < 0), the convention check
(its arguments swapped), the backward-route guard (removed), a `.detach()` or a `.float()` on
forward's result and forward's arguments swapped (`self.query, sources`) all passed. As in
test_rmsnorm_module_contract.py this module is the torch subject's own code: the gates reach it
by import, and other subjects skip them.

1. defaults_as_shipped: `DepthAttention(d)` with no optional argument on the fixture
   attnres.depth_module_defaults (L = 3 sources, d = 4, mean(v^2) = 1.4e-6 .. 2.9e-6, beside eps),
   computed by the oracle (fidelity.oracles.depth_attention) at eps = attnres.eps's `value:` (1e-6,
   read by the builder and re-read here, never typed), convention 'paper' and no gain. First at the
   query's own zero init (alpha = 1/3 each, h the mean of the sources; eps cannot show there), then
   with the query written from the fixture (the gate writes nothing else): at a zero query every
   score is 0 and no eps could show. Every wrong default (eps 0, 1e-8, 1e-7, 1e-5, 1e-4, 1, -1e-6;
   conventions l2, l2_sqrt_d) lands >= 1.1e5 float32 tolerances away (the fixture's predictions,
   re-checked here). float64 is built with dtype= and device= only (eps still the default).
   Its parameter set, built with no optional argument: `query` alone (learned_gain off by default, as
   test_attnres_module_defaults.py holds for Block AttnRes: a gain of ones changes no output at init,
   so only the registered set shows it), float32 (the reference's default dtype, its signature).
2. Refusals (no gate class, as the other *_module_contract.py guard gates): d = 0, d = -1, an
   unknown convention and an unknown backward route raise ValueError at construction; d = 1 and
   d = 2 build and run. Reading `as_documented` (fidelity.gates.refusals).
3. gradient_reach: float64, the query moved off its zero init by a seeded draw, one backward of a
   seeded random cotangent through h (and, in other instances, through alpha) for seeded sources
   [3, 2, 4]: the sources, `query` and (learned_gain=True) `gain` each get a non-zero gradient, on
   both gradient routes (reading `dead_gradients`).
4. dtype_device: a module built in float64 (and float32) on the input's device returns h and alpha
   in its input's dtype and on its device (reading `outputs_off_contract`, 0 passes).

Tolerance (gate 1): as the default-eps gate of depth attention (test_attnres_default_eps.py), a
softmax of scores with a handful of roundings each, and h a three-term sum of alpha_i v_i (mild
cancellation, at most 1.8x): 32 eps relative, entrywise. Readings on the torch reference (CPU):
1.82 eps in float32 and in float64 (0.75 eps at init, the rounding of 1/3). The nearest wrong
default, eps = 1e-7, reads 1.1e5 tolerances in float32 (5.9e13 in float64); eps = 1e-5 (P230)
5.1e5, -1e-6 2.5e5, 0 1.2e5, 1.0 1.3e6 (the fixture's predictions; observed the same under
perturbation).
"""
from __future__ import annotations

import importlib

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_bound, assert_close, separation
from fidelity.gates.fixture_values import expected, fixture, value
from fidelity.gates.gradient_reach import assert_gradients_reach
from fidelity.gates.refusals import assert_behaves_as_documented
from fidelity.spec.values import spec_value

REFERENCE_MODULE = "fidelity.impl.torch.depth_attention"
FIXTURE = "attnres.depth_module_defaults"
DEFAULT_EPS_FROM = "attnres.eps"
DEFAULT_DTYPE = torch.float32  # the reference's default dtype of the parameters (DepthAttention's signature)
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
MODULE_TOL = Tolerance(eps_multiple=32, floor=1e-30)  # measured 1.82 eps (f32 and f64), 0.75 at init
EQUATIONS = ["attnres.eq2", "attnres.eq4", "attnres.rmsnorm_gain"]


def _reference(subject):
    if subject.name != "torch":
        pytest.skip(f"{REFERENCE_MODULE}'s DepthAttention is the torch subject's own module; subject {subject.name} "
                    "is held to depth attention through its function (test_attnres_default_eps.py and the others)")
    return importlib.import_module(REFERENCE_MODULE)


def _weakest_prediction_separation() -> float:
    """The wrong default closest to the right output, in float32 tolerances; a weak fixture is an error, not a finding."""
    right = fixture(FIXTURE)["expected"]["alpha_and_h"]["float64"]
    seps = {name: max(separation(e, w, MODULE_TOL, torch.float32) for e, w in zip(right, p["float64"]))
            for name, p in fixture(FIXTURE)["predictions"].items()}
    name = min(seps, key=seps.get)
    readings.record(seps[name], "fixture_separation")
    if seps[name] < 10:
        raise ValueError(f"{FIXTURE}: the wrong default {name} lies only {seps[name]:.3g} tolerances away: weak gate")
    return seps[name]


def _check_fixture_eps() -> None:
    fixture_eps = float(fixture(FIXTURE)["params"]["eps"]["float64"])
    if fixture_eps != spec_value(DEFAULT_EPS_FROM):
        raise ValueError(f"{FIXTURE} was built at eps {fixture_eps!r}, the spec ({DEFAULT_EPS_FROM}) says "
                         f"{spec_value(DEFAULT_EPS_FROM)!r}: regenerate the fixtures")


@pytest.mark.gate(equations=["attnres.eps", "attnres.score_conventions", "attnres.eq2", "attnres.eq4",
                             "attnres.init_zero_query"],
                  mechanism="depth_attention", targets=[REFERENCE_MODULE], gate_class="defaults_as_shipped")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_depth_attention_built_with_no_optional_argument_is_the_oracle_at_the_spec_default_eps(subject, device, dtype):
    module = _reference(subject)
    _check_fixture_eps()
    _weakest_prediction_separation()
    sources = value(FIXTURE, "sources", dtype, device)
    d = sources.shape[-1]
    if dtype == DEFAULT_DTYPE:
        attend = module.DepthAttention(d).to(device)  # every optional argument as shipped, the device included
    else:
        attend = module.DepthAttention(d, dtype=dtype, device=device)  # eps, convention, gain, route as shipped
    with torch.no_grad():
        h0, alpha0 = attend(sources)  # the query at its own init (zero): alpha uniform, eps cannot show
        assert_close(torch.cat([alpha0, h0]),
                     torch.cat([expected(FIXTURE, "alpha_at_init", dtype, device),
                                expected(FIXTURE, "h_at_init", dtype, device)]),
                     MODULE_TOL, reading_name="at_init",
                     what="[alpha, h] of DepthAttention(d) at its query's own init (zero), no optional argument")
        attend.query.copy_(value(FIXTURE, "query", dtype, device))  # the only value the gate writes
        h, alpha = attend(sources)
    assert_close(torch.cat([alpha, h]), expected(FIXTURE, "alpha_and_h", dtype, device), MODULE_TOL,
                 what=f"[alpha, h] of DepthAttention(d) with its default eps (the spec's {DEFAULT_EPS_FROM}), "
                      "convention and gain, the query written from the fixture")


@pytest.mark.gate(equations=["attnres.rmsnorm_gain", "attnres.init_zero_query"], mechanism="depth_attention",
                  targets=[REFERENCE_MODULE], gate_class="defaults_as_shipped")
def test_depth_attention_built_with_no_optional_argument_registers_a_float32_query_and_no_gain(subject, device):
    """learned_gain=False by default: `query` is the only parameter (a gain of ones changes no output at
    init, so only the registered set shows the default; an optimiser would train what is registered), and
    it is float32. Readings: the parameters other than `query`, then those not float32."""
    module = _reference(subject)
    attend = module.DepthAttention(4)
    names = sorted(name for name, _ in attend.named_parameters())
    assert_bound(len(set(names) - {"query"}), at_most=0, reading_name="parameters_beyond_the_query",
                 what=f"DepthAttention(d) must register the pseudo-query alone (no learned gain by default): {names}")
    wrong_dtype = [name for name, p in attend.named_parameters() if p.dtype != DEFAULT_DTYPE]
    assert_bound(len(wrong_dtype), at_most=0, reading_name="parameters_not_float32",
                 what=f"DepthAttention(d) must build float32 parameters (the reference's default dtype): "
                      f"{wrong_dtype} are not")


def _build(module, device, d: int, **kwargs):
    return lambda: module.DepthAttention(d, dtype=torch.float64, device=device, **kwargs)


def _build_and_run(module, device, d: int):
    def run():
        attend = module.DepthAttention(d, dtype=torch.float64, device=device)
        return attend(torch.ones(2, d, dtype=torch.float64, device=device))
    return run


# case -> (the call, the error the constructor documents, or None when it must build and run)
CASES = {
    "d_zero": (lambda m, dev: _build(m, dev, 0), ValueError),
    "d_negative": (lambda m, dev: _build(m, dev, -1), ValueError),
    "unknown_convention": (lambda m, dev: _build(m, dev, 4, convention="rms"), ValueError),
    "unknown_backward_route": (lambda m, dev: _build(m, dev, 4, backward="fused"), ValueError),
    "d_one_builds_and_runs": (lambda m, dev: _build_and_run(m, dev, 1), None),
    "d_two_builds_and_runs": (lambda m, dev: _build_and_run(m, dev, 2), None),
}


@pytest.mark.gate(equations=EQUATIONS + ["attnres.score_conventions"], mechanism="depth_attention",
                  targets=[REFERENCE_MODULE])
@pytest.mark.parametrize("case", sorted(CASES))
def test_depth_attention_refuses_a_bad_width_convention_or_route_at_construction(subject, device, case):
    """DepthAttention raises ValueError for d < 1 ("d must be >= 1"), an unknown score convention and an
    unknown backward route, when it is built (not at its first call); the smallest widths build and run."""
    module = _reference(subject)
    make, error = CASES[case]
    assert_behaves_as_documented(make(module, device), error, case=case)


@pytest.mark.gate(equations=EQUATIONS, mechanism="depth_attention", targets=[REFERENCE_MODULE],
                  gate_class="gradient_reach")
@pytest.mark.parametrize("backward", ["autograd", "manual"])
@pytest.mark.parametrize("output", ["h", "alpha"])
@pytest.mark.parametrize("learned_gain", [False, True], ids=["no_gain", "learned_gain"])
def test_one_backward_through_depth_attention_reaches_the_sources_the_query_and_the_gain(subject, device, learned_gain,
                                                                                          output, backward):
    module = _reference(subject)
    attend = module.DepthAttention(4, learned_gain=learned_gain, backward=backward, dtype=torch.float64,
                                   device=device)
    g = torch.Generator().manual_seed(230)
    with torch.no_grad():  # off the zero init: at q = 0 alpha is uniform and d alpha / d sources vanishes
        attend.query.copy_(torch.randn(4, generator=g, dtype=torch.float64).to(device))
    sources = torch.randn(3, 2, 4, generator=g, dtype=torch.float64).to(device).requires_grad_(True)
    tensors = {"sources": sources, "query": attend.query} | ({"gain": attend.gain} if learned_gain else {})
    pick = 0 if output == "h" else 1
    assert_gradients_reach(lambda: attend(sources)[pick], tensors,
                           what=f"one backward through {output} of DepthAttention(4, learned_gain={learned_gain}, "
                                f"backward={backward!r}) (float64)")


@pytest.mark.gate(equations=EQUATIONS, mechanism="depth_attention", targets=[REFERENCE_MODULE],
                  gate_class="dtype_device")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_depth_attention_returns_the_dtype_and_device_of_its_input(subject, device, dtype):
    module = _reference(subject)
    attend = module.DepthAttention(4, dtype=dtype, device=device)
    g = torch.Generator().manual_seed(231)
    sources = torch.randn(3, 2, 4, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)
    with torch.no_grad():
        outs = dict(zip(("h", "alpha"), attend(sources)))
    off = [f"{name} dtype {t.dtype}" for name, t in outs.items() if t.dtype != sources.dtype]
    off += [f"{name} device {t.device}" for name, t in outs.items() if t.device != sources.device]
    assert_bound(len(off), at_most=0, reading_name="outputs_off_contract",
                 what=f"DepthAttention(4, dtype={dtype}) on a {dtype} input on {sources.device}: its outputs have {off}")
