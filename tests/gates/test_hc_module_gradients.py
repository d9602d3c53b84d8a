"""Gates: gradients through the hyper-connection module as its factory builds it (static HC and DHC).

No gate took a backward pass through `hyper_connection` before issue 14: a .detach() on the width
connection (A_r^T H), on beta, or a dynamic weight read through .data passed every gate.

Both routes: the layer alone, module(H, body) from H with distinct streams, and a model's way in and
out, readout(module(expand(h), body)) from a hidden h.

- gradients_finite_differences: float64, every parameter the module has (named_parameters: static_beta,
  static_alpha, and for DHC dynamic_alpha_fn, dynamic_beta_fn, alpha_scale, beta_scale, layer_norm.weight,
  layer_norm.bias) moved off its init by a seeded offset, and a nonlinear body T(h) = tanh(h W + b);
  autograd's Jacobian with respect to H and to every parameter against central differences of the
  same forward (along two seeded random directions per tensor, fidelity.gates.jacobians), by gradcheck's
  criterion (the reading is the worst ratio, <= 1 passes).
- gradient_reach: the same module; H and every parameter get a non-zero gradient from one backward of
  a seeded random cotangent (static HC has only static_beta and static_alpha).
- gradients_from_oracle: d out / d H of DHC at the fixture hc.module_dynamic, whose every parameter is
  written, against the oracle's exact sympy Jacobian (fixture field jacobian_H).
"""
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import expected
from fidelity.gates.gradient_reach import assert_gradients_reach
from fidelity.gates.jacobians import assert_gradcheck_every_tensor, jacobian_of_tensor
from fidelity.subjects.subject import NotRun
from hc_module_point import module_at_fixture

MECH = "hyper_connection"
FD_STEP, GRAD_ATOL, GRAD_RTOL = 1e-6, 1e-8, 1e-6  # float64 central differences of LayerNorm, tanh and matmuls
N, D, LAYER = 3, 4, 4
OFFSET = 0.5  # every parameter moved by OFFSET * N(0, 1) (seeded) off its init: no zero, no identity left
MODES = [False, True]
MODE_IDS = ["static", "dynamic"]
ROUTES = ["layer", "expand_readout"]
ORACLE_FIXTURE = "hc.module_dynamic"
# d out / d H through a LayerNorm, tanh and two matmuls on O(1) numbers (entries O(1)): 64 eps,
# floor 1 (an entry near 0 is a cancellation of O(1) terms)
ORACLE_TOL = Tolerance(eps_multiple=64, floor=1.0)
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]


def _module(subject, device, dynamic: bool, seed: int):
    """The factory's module in float64, every parameter moved off its init by a seeded offset."""
    module = subject.get(MECH)(N, D, LAYER, dynamic=dynamic, dtype=torch.float64, device=device)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in module.named_parameters():
            p.add_(OFFSET * torch.randn(p.shape, generator=g, dtype=torch.float64).to(device))
    return module, g


def _body(g: torch.Generator, device):
    W = (torch.randn(D, D, generator=g, dtype=torch.float64) / D ** 0.5).to(device)
    b = (0.5 * torch.randn(D, generator=g, dtype=torch.float64)).to(device)
    return lambda h: torch.tanh(h @ W + b)


def _route(module, body, g: torch.Generator, device, route: str):
    """(forward, {name: leaf}) for one route: "layer" is module(H, body) from a leaf H [2, n, d] with
    distinct streams; "expand_readout" is readout(module(expand(h), body)) from a leaf hidden h [2, d],
    the way a model enters and leaves the streams (so a detach in expand or readout is seen)."""
    params = dict(module.named_parameters())
    if not params:
        raise NotRun("the module has no parameters to differentiate")
    if route == "layer":
        H = torch.randn(2, N, D, generator=g, dtype=torch.float64).to(device).requires_grad_(True)
        return (lambda: module(H, body)), {"H": H} | params
    h = torch.randn(2, D, generator=g, dtype=torch.float64).to(device).requires_grad_(True)
    return (lambda: module.readout(module(module.expand(h), body))), {"h": h} | params


@pytest.mark.gate(equations=["hc.eq2", "hc.eq3", "hc.eq4", "hc.eq5", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12",
                             "hc.eq13", "hc.alg2"],
                  mechanism=MECH, gate_class="gradients_finite_differences")
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("dynamic", MODES, ids=MODE_IDS)
def test_gradients_through_the_module_match_central_differences_for_H_and_every_parameter(subject, device, dynamic,
                                                                                           route):
    module, g = _module(subject, device, dynamic, seed=20261214)
    forward, tensors = _route(module, _body(g, device), g, device, route)
    assert_gradcheck_every_tensor(forward, tensors, step=FD_STEP, atol=GRAD_ATOL, rtol=GRAD_RTOL,
                                  what=f"d {'DHC' if dynamic else 'static HC'} ({route}) / d ({', '.join(tensors)})")


@pytest.mark.gate(equations=["hc.eq2", "hc.eq3", "hc.eq4", "hc.eq5", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12",
                             "hc.eq13", "hc.alg2"],
                  mechanism=MECH, gate_class="gradient_reach")
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("dynamic", MODES, ids=MODE_IDS)
def test_H_and_every_parameter_of_the_module_receive_a_gradient(subject, device, dynamic, route):
    module, g = _module(subject, device, dynamic, seed=20261215)
    forward, tensors = _route(module, _body(g, device), g, device, route)
    assert_gradients_reach(forward, tensors, what=f"{'DHC' if dynamic else 'static HC'} module ({route}), "
                                                  "one backward of a seeded cotangent")


@pytest.mark.gate(equations=["hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.eq3", "hc.eq4", "hc.eq5"],
                  mechanism=MECH, gate_class="gradients_from_oracle")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_the_jacobian_of_dhc_with_respect_to_H_is_the_oracles(subject, device, dtype):
    module, H, body = module_at_fixture(subject, ORACLE_FIXTURE, True, dtype, device)
    H.requires_grad_(True)
    n, d = H.shape
    J = jacobian_of_tensor(lambda: module(H, body), H).reshape(n * d, n * d)
    assert_close(J, expected(ORACLE_FIXTURE, "jacobian_H", dtype, device), ORACLE_TOL,
                 what="d out / d H of DHC against the oracle's exact Jacobian")
