"""Gates: the reference RMSNorm module as its constructor builds it: defaults, guard, gradients, dtype and device.

fidelity discover --module fidelity.impl.torch.rmsnorm found 12 blind spots, all in the `RMSNorm`
class (exported by fidelity.impl.torch; mHC and the loop model call `rms_norm`): every gate built
it with an explicit eps and dtype, none with d < 1, none took a gradient through it and none
looked at its output's dtype. So the default eps (1e-5, 1e-7, 0, 1, -1e-6 in place of 1e-6), the
default dtype (float16), the `d < 1` guard (removed, or its boundary moved to d <= 1, d < 2, d < 0),
a `.detach()` and a `.float()` on forward's output all passed. As in the mean-form gate
(test_rmsnorm_mean_form.py::test_reference_rms_norm_module_is_the_mean_form) this module is the
torch subject's own code: the gates reach it by import, and other subjects skip them.

1. defaults_as_shipped: `RMSNorm(d)` with no optional argument, its gain its own init (ones,
   rmsnorm.gain), on the fixture rmsnorm.module_defaults: x = [1, -2, 3, -4] / 1000 (mean(x^2) =
   7.5e-6, beside eps), y computed by the oracle at eps = attnres.eps's `value:` (1e-6, read by the
   builder and re-read here, never typed). Every wrong default (eps 0, 1e-8, 1e-7, 1e-5, 1, -1e-6)
   lands >= 6.0e4 float32 tolerances away (the fixture's predictions, re-checked here). The
   parameters of a module built with no dtype are float32, the reference's default dtype (its
   constructor's signature, as for every module of fidelity.impl.torch); float64 is built with
   dtype= and device= only (eps still the default).
2. Refusals (no gate class, as the other *_module_contract.py guard gates): d = 0 and d = -1 raise
   ValueError; d = 1 and d = 2 build and run. Reading `as_documented` (fidelity.gates.refusals).
3. gradient_reach: float64, one backward of a seeded random cotangent through module(x) for a
   seeded x [3, 4]: x and `gain` each get a non-zero gradient (reading `dead_gradients`).
4. dtype_device: a module built in float64 (and float32) on the input's device returns its input's
   dtype and device (reading `outputs_off_contract`, 0 passes).

Tolerance (gate 1): as the mean-form gate, y_i = x_i * rsqrt(mean(x^2) + eps) has a handful of
roundings, each <= 1 eps relative per entry (no cancellation): 8 eps relative. Readings on the
torch reference (CPU): 0.73 eps in float32, 0 in float64. The nearest wrong default, eps = 1e-7, reads
6.0e4 tolerances in float32 (3.2e13 in float64).
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

REFERENCE_MODULE = "fidelity.impl.torch.rmsnorm"
FIXTURE = "rmsnorm.module_defaults"
DEFAULT_EPS_FROM = "attnres.eps"
DEFAULT_DTYPE = torch.float32  # the reference's default dtype of the parameters (RMSNorm's signature)
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
MODULE_TOL = Tolerance(eps_multiple=8, floor=1e-30)  # a handful of roundings; measured 0.73 eps (f32), 0 (f64)
EQUATIONS = ["rmsnorm.mean_form", "rmsnorm.gain"]


def _reference(subject):
    if subject.name != "torch":
        pytest.skip(f"{REFERENCE_MODULE} is the torch subject's own module; subject {subject.name} is held to the "
                    "mean form through its depth-attention scores (test_key_rmsnorm_read_through_depth_attention_scores)")
    return importlib.import_module(REFERENCE_MODULE)


def _weakest_prediction_separation() -> float:
    """The wrong default closest to the right y, in float32 tolerances; a weak fixture is an error, not a finding."""
    right = fixture(FIXTURE)["expected"]["y"]["float64"]
    seps = {name: max(separation(e, w, MODULE_TOL, torch.float32) for e, w in zip(right, p["float64"]))
            for name, p in fixture(FIXTURE)["predictions"].items()}
    name = min(seps, key=seps.get)
    readings.record(seps[name], "fixture_separation")
    if seps[name] < 10:
        raise ValueError(f"{FIXTURE}: the wrong default {name} lies only {seps[name]:.3g} tolerances away: weak gate")
    return seps[name]


@pytest.mark.gate(equations=EQUATIONS + [DEFAULT_EPS_FROM], mechanism="depth_attention",
                  targets=[REFERENCE_MODULE], gate_class="defaults_as_shipped")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_rmsnorm_built_with_no_optional_argument_is_the_oracle_at_the_spec_default_eps(subject, device, dtype):
    module = _reference(subject)
    fixture_eps = float(fixture(FIXTURE)["params"]["eps"]["float64"])
    if fixture_eps != spec_value(DEFAULT_EPS_FROM):
        raise ValueError(f"{FIXTURE} was built at eps {fixture_eps!r}, the spec ({DEFAULT_EPS_FROM}) says "
                         f"{spec_value(DEFAULT_EPS_FROM)!r}: regenerate the fixtures")
    _weakest_prediction_separation()
    x = value(FIXTURE, "x", dtype, device)
    d = x.shape[-1]
    if dtype == DEFAULT_DTYPE:
        norm = module.RMSNorm(d)  # every optional argument as shipped: eps, dtype and device
        wrong_dtype = [name for name, p in norm.named_parameters() if p.dtype != DEFAULT_DTYPE]
        assert_bound(len(wrong_dtype), at_most=0, reading_name="parameters_not_float32",
                     what=f"RMSNorm(d) must build float32 parameters (the reference's default dtype): "
                          f"{wrong_dtype} are not")
        norm = norm.to(device)
    else:
        norm = module.RMSNorm(d, dtype=dtype, device=device)  # eps as shipped
    with torch.no_grad():
        got = norm(x)
    assert_close(got, expected(FIXTURE, "y", dtype, device), MODULE_TOL,
                 what=f"RMSNorm(d) with its default eps (the spec's {DEFAULT_EPS_FROM}) and its own gain init")


def _build(module, device, d: int):
    return lambda: module.RMSNorm(d, dtype=torch.float64, device=device)


def _build_and_run(module, device, d: int):
    def run():
        norm = module.RMSNorm(d, dtype=torch.float64, device=device)
        return norm(torch.ones(2, d, dtype=torch.float64, device=device))
    return run


# case -> (the call, the error the constructor documents, or None when it must build and run)
CASES = {
    "d_zero": (lambda m, dev: _build(m, dev, 0), ValueError),
    "d_negative": (lambda m, dev: _build(m, dev, -1), ValueError),
    "d_one_builds_and_runs": (lambda m, dev: _build_and_run(m, dev, 1), None),
    "d_two_builds_and_runs": (lambda m, dev: _build_and_run(m, dev, 2), None),
}


@pytest.mark.gate(equations=EQUATIONS, mechanism="depth_attention", targets=[REFERENCE_MODULE])
@pytest.mark.parametrize("case", sorted(CASES))
def test_rmsnorm_refuses_a_width_below_one_with_the_documented_error(subject, device, case):
    """RMSNorm(d) raises ValueError for d < 1 ("d must be >= 1"); the smallest widths build and run."""
    module = _reference(subject)
    make, error = CASES[case]
    assert_behaves_as_documented(make(module, device), error, case=case)


@pytest.mark.gate(equations=EQUATIONS, mechanism="depth_attention", targets=[REFERENCE_MODULE],
                  gate_class="gradient_reach")
def test_one_backward_through_rmsnorm_reaches_the_input_and_the_gain(subject, device):
    module = _reference(subject)
    norm = module.RMSNorm(4, dtype=torch.float64, device=device)
    g = torch.Generator().manual_seed(213)
    x = torch.randn(3, 4, generator=g, dtype=torch.float64).to(device).requires_grad_(True)
    assert_gradients_reach(lambda: norm(x), {"x": x, "gain": norm.gain},
                           what="one backward through RMSNorm(4) (float64)")


@pytest.mark.gate(equations=EQUATIONS, mechanism="depth_attention", targets=[REFERENCE_MODULE],
                  gate_class="dtype_device")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_rmsnorm_returns_the_dtype_and_device_of_its_input(subject, device, dtype):
    module = _reference(subject)
    norm = module.RMSNorm(4, dtype=dtype, device=device)
    g = torch.Generator().manual_seed(214)
    x = torch.randn(3, 4, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)
    with torch.no_grad():
        out = norm(x)
    off = [] if out.dtype == x.dtype else [f"dtype {out.dtype}"]
    off += [] if out.device == x.device else [f"device {out.device}"]
    assert_bound(len(off), at_most=0, reading_name="outputs_off_contract",
                 what=f"RMSNorm(4, dtype={dtype}) on a {dtype} input on {x.device}: its output has {off}")
