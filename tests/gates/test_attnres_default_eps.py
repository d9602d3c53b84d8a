"""Gate (defaults as shipped): depth attention called with no optional argument is the oracle at the spec's defaults.

fidelity discover --module fidelity.impl.torch.depth_attention found the default eps unheld:
every other gate passes eps explicitly, so changing the default (to 1e-5, 1e-7, 0, 1 or -1e-6)
passed them all. The convention's default was unheld the same way. Here the call passes only
the sources and the query (and, in two instances, the gradient route, so each route's default
path is held too; the instance "default" passes nothing else at all, the route included).

The fixture attnres.depth_defaults is computed by the oracle at eps = attnres.eps's `value:`
(1e-6, read by the fixture's builder, never typed there) and the convention "paper"
(attnres.score_conventions: "the default"): keys with mean(k^2) = 2.5e-7 beside eps, so
alpha0 is 0.857 at the default, 0.651 at eps = 1e-5 and 0.804 under the l2 convention; the
builder checks every plausible wrong default (eps 0, 1e-8, 1e-7, 1e-5, 1e-4; l2, l2_sqrt_d)
lands >= 10 tolerances away (params.separation_in_tolerances: > 9e4). The documented default
of the mechanism's interface (fidelity show mechanism:depth_attention) must be the spec's too.

Tolerance: alpha is a two-way softmax of one score with a handful of roundings, as in the
three-conventions gate: 32 eps relative.

Two comparisons, each attributed to what it holds (fidelity.gates.attribution): first the call with
eps = attnres.eps given and nothing else, against the same fixture: a difference there is the paper's
score or the default convention (attnres.eq2, attnres.score_conventions); then the call with no eps: a
difference only there is the default eps alone, attnres.eps, a value the paper never states (tier c). Our
reference is held to it; another package that chose another default "differs from our choice" (check
--subject), never a finding, and the message names both defaults. (eps is an option, not an optional
input: no subject lacks it; one that cannot take ours refuses it with NotRun.)
"""
import pytest
import torch

from fidelity.gates.attribution import checking
from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.declared_defaults import declared_default
from fidelity.gates.fixture_values import expected, value
from fidelity.mechanisms.depth_attention import MECHANISM
from fidelity.mechanisms.docs import as_dict
from fidelity.spec.values import spec_value

FIXTURE = "attnres.depth_defaults"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
ROUTES = ["default", "autograd", "manual"]  # "default": no backward argument, the subject's own default route
TOL = Tolerance(eps_multiple=32, floor=1e-30)


def _documented_default(name: str):
    [arg] = [a for a in as_dict(MECHANISM)["interface"]["call"]["arguments"] if a["name"] == name]
    return arg["default"]


@pytest.mark.gate(equations=["attnres.eps", "attnres.eq2", "attnres.score_conventions"], mechanism="depth_attention",
                  gate_class="defaults_as_shipped")
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_depth_attention_without_eps_is_the_oracle_at_the_default_eps(subject, device, dtype, backward):
    if backward != "default" and not subject.supports("depth_attention", backward):
        pytest.skip(f"subject {subject.name} has no {backward!r} backward route for depth_attention")
    spec_eps = spec_value("attnres.eps")
    if float(_documented_default("eps")) != spec_eps:
        raise ValueError(f"the interface documents default eps {_documented_default('eps')!r}, the spec "
                         f"(attnres.eps) {spec_eps!r}: the interface and the spec disagree")
    if str(_documented_default("convention")).strip("'\"") != "paper":
        raise ValueError(f"the interface documents default convention {_documented_default('convention')!r}, "
                         "attnres.score_conventions 'paper'")
    depth_attention = subject.get("depth_attention")
    route = {} if backward == "default" else {"backward": backward}
    but = "" if backward == "default" else f" but backward={backward!r}"
    sources, query = value(FIXTURE, "sources", dtype, device), value(FIXTURE, "query", dtype, device)
    want = expected(FIXTURE, "alpha", dtype, device)
    with checking("attnres.eq2", "attnres.score_conventions"):  # the paper's score, the default convention
        _, alpha = depth_attention(sources, query, eps=spec_eps, **route)
        assert_close(alpha, want, TOL, what=f"alpha at eps = {spec_eps!r} (attnres.eps, given) and the default "
                                            f"convention (no other optional argument{but})")
    with checking("attnres.eps"):  # the paper's score holds at our eps: what is left is the default eps
        _, alpha = depth_attention(sources, query, **route)
        assert_close(alpha, want, TOL,
                     what=f"alpha at the default eps and convention (no optional argument{but}); our default eps "
                          f"{spec_eps!r} (attnres.eps), the subject's {declared_default(depth_attention, 'eps')}")
