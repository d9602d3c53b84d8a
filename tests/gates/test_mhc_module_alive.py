"""Gate: every parameter of the mHC residual is alive: moving it moves the output as far as the oracle says.

The module is built by its factory (3 streams of width 2, eps and t_max as shipped) and given the
nine parameters of the seeded point mhc.module_alive (= mhc.module_jacobian's); the body is the
fixture's linear F(v) = W v. For ONE parameter at a time, the fixture's seeded direction (every
entry +-1/8) is added in place, and the subject's max|out(p + d) - out(p)| must be at least half
the oracle's (fidelity.gates.parameters_alive): a parameter the forward never reads (a coefficient
not multiplied, a bias never added, streams rebuilt so that H_res has no effect) reads 0.

One instance per parameter and layout. In the sliced layout phi_pre, alpha_pre and b_pre are not
instances: the spec leaves them unwired there (mhc.layout.sliced: H_pre is computed and never read;
the oracle's change is exactly 0, which test_mhc_module_gradients.py holds as "no gradient").
"""
import pytest
import torch

from fidelity.gates.fixture_values import fixture
from fidelity.gates.parameters_alive import assert_moves_output
from mhc_module_point import PARAMS, module_at_fixture

FIXTURE = "mhc.module_alive"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
UNWIRED_IN_SLICED = ("phi_pre", "alpha_pre", "b_pre")  # mhc.layout.sliced: never read, so never alive there
CASES = [("paper", p) for p in PARAMS] + [("sliced", p) for p in PARAMS if p not in UNWIRED_IN_SLICED]


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.params", "mhc.layout.sliced",
                             "mhc.layout.replicated"],
                  mechanism="mhc_residual", gate_class="parameters_alive")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("layout,name", CASES, ids=[f"{layout}-{name}" for layout, name in CASES])
def test_moving_each_parameter_moves_the_output_as_the_oracle_says(subject, device, layout, name, dtype):
    """max|out(p + d) - out(p)| >= 1/2 the oracle's, for the fixture's direction d of parameter `name` alone."""
    module, x, body, named = module_at_fixture(subject, FIXTURE, layout, dtype, device)
    with torch.no_grad():
        before = module(x, body).detach().clone()
        direction = torch.tensor(fixture(FIXTURE)["inputs"]["directions"][name], dtype=torch.float64)
        named[name].add_(direction.to(dtype=dtype, device=device))
        after = module(x, body).detach().clone()
    oracle = float(fixture(FIXTURE)["expected"][layout]["max_change"][name]["float64"])
    assert_moves_output(before, after, oracle, what=f"{name} moved by the fixture's direction ({layout} layout)")
