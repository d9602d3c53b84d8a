"""Gate (defaults_as_shipped): factory(n, d, layer_index) with no optional argument is the oracle at the spec's defaults.

The fixture hc.module_defaults is computed by the oracle at the spec's values: DHC by default
(hc.dhc_default), s_alpha = s_beta = scale_init = 0.01 (hc.alg2.scale_init), LayerNorm eps 1e-5 with
weight 1 and bias 0 (hc.alg2.layer_norm_eps), B = 1 (hc.eq14.static_beta), A_m = e_(k mod n), A_r = I
(hc.eq14). The gate writes ONLY dynamic_alpha_fn and dynamic_beta_fn: at their zero init tanh(0) = 0
would hide scale_init and the LayerNorm (eps, affine init) entirely. Everything else is the module's
own. One stream has variance 2.4e-6, beside eps, so eps moves its B(H) entry; every one of the
fixture's 16 wrong defaults (its predictions) lands >= 100 float32 tolerances away, re-checked here.

Tolerance: as the DHC fixture gate, LayerNorm + tanh + two small matmuls on O(1) numbers: 64 eps,
floor 1 (out mixes O(1) terms; relative to their scale, not to a cancelled entry).
"""
import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.fixture_values import expected, fixture, value

FIXTURE = "hc.module_defaults"
MECH = "hyper_connection"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
TOL = Tolerance(eps_multiple=64, floor=1.0)  # LayerNorm + tanh + matmuls on O(1) numbers; out's scale is 1
DYNAMIC_WEIGHTS = ("dynamic_alpha_fn", "dynamic_beta_fn")


def _weakest_prediction(device) -> tuple[str, float]:
    """The wrong default closest to the right output, in float32 tolerances (the gate's own TOL)."""
    want = expected(FIXTURE, "out", torch.float64, device)
    rtol = TOL.rtol(torch.float32)
    seps = {}
    for name, p in fixture(FIXTURE)["predictions"].items():
        wrong = torch.tensor(p["float64"], dtype=torch.float64, device=device)
        seps[name] = float(((wrong - want).abs() / (rtol * want.abs().clamp(min=TOL.floor))).max())
    name = min(seps, key=seps.get)
    return name, seps[name]


class LinearBody:
    def __init__(self, W: torch.Tensor):
        self.W = W

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        return h @ self.W


@pytest.mark.gate(equations=["hc.alg2.scale_init", "hc.alg2.layer_norm_eps", "hc.eq14.static_beta", "hc.dhc_default",
                             "hc.eq14", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.alg2"],
                  mechanism=MECH, gate_class="defaults_as_shipped")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_the_module_as_the_factory_builds_it_is_the_oracle_at_the_spec_defaults(subject, device, dtype):
    name, separation = _weakest_prediction(device)
    readings.record(separation, "fixture_separation")
    if separation < 10:
        raise ValueError(f"{FIXTURE}: the wrong default {name} lies only {separation:.3g} tolerances away: weak gate")
    fx = fixture(FIXTURE)["inputs"]
    n, d, k = int(fx["n"]), int(fx["d"]), int(fx["layer_index"])
    if dtype == torch.float32:
        module = subject.get(MECH)(n, d, k)  # every optional argument as shipped, dtype and device included
        wrong_dtype = [name for name, p in module.named_parameters() if p.dtype != torch.float32]
        assert_bound(len(wrong_dtype), at_most=0, reading_name="parameters_not_float32",
                     what=f"factory(n, d, k) must build float32 parameters (the interface's default dtype): "
                          f"{wrong_dtype} are not")
        module = module.to(device)
    else:
        module = subject.get(MECH)(n, d, k, dtype=dtype, device=device)
    # the spec's default is DHC (hc.dhc_default): a module built with no `dynamic` must have the dynamic weights
    missing = [w for w in DYNAMIC_WEIGHTS if not isinstance(getattr(module, w, None), torch.nn.Parameter)]
    assert_bound(len(missing), at_most=0, reading_name="missing_dynamic_weights",
                 what=f"factory(n, d, k) with no `dynamic` must build DHC (hc.dhc_default); it lacks {missing}")
    with torch.no_grad():
        module.dynamic_alpha_fn.copy_(value(FIXTURE, "dynamic_alpha_fn", dtype, device))
        module.dynamic_beta_fn.copy_(value(FIXTURE, "dynamic_beta_fn", dtype, device))
    out = module(value(FIXTURE, "H", dtype, device), LinearBody(value(FIXTURE, "W_T", dtype, device)))
    assert_close(out, expected(FIXTURE, "out", dtype, device), TOL,
                 what="out of factory(n, d, k) at its defaults (scale_init, LayerNorm eps and init, Eq. 14)")
