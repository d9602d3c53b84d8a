"""Gate: depth attention called without `eps` uses the spec's default (attnres.eps: 1e-6).

fidelity discover --module fidelity.impl.torch.depth_attention found it unheld: every other
gate passes eps explicitly, so changing the default (to 1e-5, 1e-7, 0, 1 or -1e-6) passed them
all. The fixture attnres.default_eps puts keys with mean(k^2) = 2.5e-7 beside eps = 1e-6, so
alpha0 is 0.857 at the default and 0.651 at 1e-5. The documented default of the mechanism's
interface (fidelity show mechanism:depth_attention) must be the fixture's eps too.

Tolerance: alpha is a two-way softmax of one score with a handful of roundings, as in the
three-conventions gate: 32 eps relative.
"""
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import expected, fixture, value
from fidelity.mechanisms.depth_attention import MECHANISM
from fidelity.mechanisms.docs import as_dict

FIXTURE = "attnres.default_eps"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
ROUTES = ["autograd", "manual"]
TOL = Tolerance(eps_multiple=32, floor=1e-30)


def _documented_default_eps() -> float:
    [eps] = [a for a in as_dict(MECHANISM)["interface"]["call"]["arguments"] if a["name"] == "eps"]
    return float(eps["default"])


@pytest.mark.gate(equations=["attnres.eps", "attnres.eq2"], mechanism="depth_attention")
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_depth_attention_without_eps_is_the_oracle_at_the_default_eps(subject, device, dtype, backward):
    if not subject.supports("depth_attention", backward):
        pytest.skip(f"subject {subject.name} has no {backward!r} backward route for depth_attention")
    fixture_eps = float(fixture(FIXTURE)["params"]["eps"]["exact"])
    assert _documented_default_eps() == fixture_eps, "the interface documents another default eps than the spec's"
    depth_attention = subject.get("depth_attention")
    _, alpha = depth_attention(value(FIXTURE, "sources", dtype, device), value(FIXTURE, "query", dtype, device),
                               backward=backward)
    assert_close(alpha, expected(FIXTURE, "alpha", dtype, device), TOL, what="alpha at the default eps")
