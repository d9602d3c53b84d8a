"""Gate: the mHC residual as shipped: factory(n, C) with no optional argument equals the oracle at the spec's defaults.

The module is built with layout, dtype and device only (none of them a default under test):
t_max, eps, alpha_init, static_init (b_pre = 10, b_res = 10 I), b_post = 0 are the factory's own.
Only phi_pre, phi_post and phi_res are written, because at their shipped init (0) the dynamic
part is off and alpha, eps and (through H~res) t_max would have no effect on anything: the
fixture mhc.module_defaults (n = Table 5's 4, every default read from the spec's `value:`
fields) puts mean(x^2) ~ 2.7e-20 beside eps = 1e-20, so eps = 0, 1e-6 or 1e-5 show, and records
how far each plausible wrong default lands, in these tolerances: t_max 10, 19 and 21 are seen in
float64 only (7.2, 0.72, 0.72 float32 tolerances; 3.9e9, 3.9e8, 3.9e8 float64 ones); every other
one (eps 1e-6, 1e-5, 0; alpha 0, 0.1, 0.001; static_init 5, 1; b_post 1 or 10) >= 2400 float32
tolerances.

Each compared quantity (out, H_pre, H_post, H_res) is its own instance, so one that fails hides
no other. Tolerance: 64 eps relative, as test_mhc_eq3.py (the Sinkhorn's 64 eps; out adds a
sigmoid, a product and an n-term sum on terms with no cancellation). H_res is compared entry by
entry, so its 4e-5-sized off-diagonals are read to their own precision, and near 10 I their logs
are about -10, not O(1): every one of the 40 log-domain normalisations rounds log H_ij by up to
10 eps/2 absolute, which is a RELATIVE error of the entry (measured in float32: 87 eps). So H_res's
64 eps are scaled by max(1, max|log H_res|) = 10.2 here (the fixture's H_res_log_scale); the
wrong-default separations above are in these same units.
"""
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import fixture, value
from mhc_module_point import module_at_fixture

FIXTURE = "mhc.module_defaults"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
TOL = Tolerance(eps_multiple=64, floor=1e-30)  # the Sinkhorn's 64 eps plus a few O(1) operations (test_mhc_eq3.py)
WRITTEN = ("phi_pre", "phi_post", "phi_res")  # the only parameters written: at 0 they would hide every default
FIELDS = ("out", "H_pre", "H_post", "H_res")


def _expected(layout: str, field: str, dtype, device) -> torch.Tensor:
    raw = fixture(FIXTURE)["expected"][layout][field]["float64"]
    return torch.tensor(raw, dtype=torch.float64).to(dtype=dtype, device=device)


@pytest.mark.gate(equations=["mhc.table5.tmax", "mhc.table5.eps", "mhc.table5.alpha_init", "mhc.table5.n",
                             "mhc.init_static_bias", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.eq3"],
                  mechanism="mhc_residual", gate_class="defaults_as_shipped")
@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_module_with_no_optional_argument_is_the_oracle_at_the_spec_defaults(subject, device, layout, dtype, field):
    """factory(4, 2, layout=, dtype=, device=) with phi_* written: out (Eq. 3), H_pre, H_post, H_res as the oracle's."""
    params = fixture(FIXTURE)["params"]
    x = value(FIXTURE, "x", dtype, device)
    n, C = x.shape
    if (n, C) != (params["n"], params["C"]):
        raise ValueError(f"{FIXTURE}: x is {n} x {C}, the fixture says n = {params['n']}, C = {params['C']}")
    module, x, body, _ = module_at_fixture(subject, FIXTURE, layout, dtype, device, names=WRITTEN)
    if field == "out":
        got = module(x, body)  # the fixture's linear body F(v) = W v
    else:
        got = dict(zip(("H_pre", "H_post", "H_res"), module.coefficients(x)))[field]
    tol = TOL
    if field == "H_res":  # the log-domain iterate's rounding scales with |log H_ij| (module docstring)
        scale = float(fixture(FIXTURE)["expected"][layout]["H_res_log_scale"]["float64"])
        tol = Tolerance(eps_multiple=TOL.eps_multiple * scale, floor=TOL.floor)
    assert_close(got, _expected(layout, field, dtype, device), tol,
                 what=f"{field} of the module as shipped ({layout} layout, n = {n}, t_max/eps/alpha/static_init "
                      "at their defaults)")
