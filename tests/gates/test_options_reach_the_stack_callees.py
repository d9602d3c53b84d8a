"""Gates: the options Block AttnRes and the loop model take, set away from their defaults, reach the code that uses them.

The same class as test_options_reach_the_callee.py one level up (issue 50 point 7): BlockAttnRes stores its
convention, eps, gains and gradient route and hands them to depth_attend / score_terms in three places (direct,
phase 1, phase 2); LoopModel hands its config's mHC options (eps, t_max, dynamic init, layout, generator), the
HC arm's `dynamic` and the AttnRes arm's convention and eps to the modules and functions it builds on. Any of
them dropped on the way runs the callee's default, which every gate built at the defaults shares.

1. BlockAttnRes(affine sublayers, d = 4, L = 4, N = 2, convention, eps = 0.25, learned_gain) in both modes,
   the queries and gains written off their inits, against fidelity.oracles.block_attnres.stack_forward at
   those options (sources of size ~0.3 beside eps: eps dropped to 1e-6 moves every score by O(1)).
2. BlockAttnRes(backward=route): the output comes from the route asked for (`_DepthAttendManualBackward`).
3. LoopModel on one token, each arm with its options off the defaults (attnres: convention l2, eps 0.25;
   mhc: paper layout, eps 0.5, t_max 2, dynamic_init_std 0.5; hc: static), against
   fidelity.oracles.loop_model.loop_logits at that config with the model's own parameters.

Reference modules (other subjects skip them). Tolerance: 64 eps relative in float64, as the module oracle gates.
"""
from __future__ import annotations

import importlib

import mpmath
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.oracles.block_attnres import affine, stack_forward
from fidelity.oracles.loop_model import loop_logits

ATTNRES_MODULE = "fidelity.impl.torch.attnres"
LOOP_MODULE = "fidelity.impl.torch.loop_model"
F64 = torch.float64
# 64 eps of the output's scale (its largest element), not of each element: an element that cancels to a small
# value keeps the rounding of the O(1) terms it came from, which a faithful variant summing in another order
# moves (drawing phi_post and phi_res in the other order, or iter_embed as randn * -0.1, read 13.7x and
# 1.01x a bound taken relative to each element). A value not reaching its callee moves the output by O(1).
OPTION_EPS_MULTIPLE = 64
EPS = 0.25
LOOP_CONFIGS = {
    "attnres": dict(arm="attnres", score_convention="l2", attnres_eps=EPS),
    "mhc": dict(arm="mhc", mhc_layout="paper", mhc_eps=0.5, sinkhorn_t_max=2, mhc_dynamic_init_std=0.5),
    "hc": dict(arm="hc", hc_dynamic=False),
}


def _option_tol(expected: torch.Tensor) -> Tolerance:
    return Tolerance(eps_multiple=OPTION_EPS_MULTIPLE, floor=float(expected.abs().max()))


def _reference(subject, name: str):
    if subject.name != "torch":
        pytest.skip(f"{name} is the torch subject's own module; subject {subject.name} is held to the mechanism "
                    "through its interface by the other gates")
    return importlib.import_module(name)


def _block(module, device, **options):
    g = torch.Generator().manual_seed(330)
    W, c = 0.5 * torch.randn(4, 4, 4, generator=g, dtype=F64), 0.1 * torch.randn(4, 4, generator=g, dtype=F64)
    subs = [lambda h, W=W[l].to(device), c=c[l].to(device): h @ W.T + c for l in range(4)]
    stack = module.BlockAttnRes(subs, 4, 2, dtype=F64, device=device, **options)
    return stack, W, c, 0.3 * torch.randn(4, generator=g, dtype=F64), g


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4", "attnres.eq6", "attnres.alg1", "attnres.eps",
                             "attnres.score_conventions", "attnres.rmsnorm_gain"], mechanism="block_attnres",
                  targets=[ATTNRES_MODULE])
@pytest.mark.parametrize("mode", ["direct", "two_phase"])
def test_block_attnres_built_off_every_default_is_the_oracle_at_its_own_options(subject, device, mode):
    module = _reference(subject, ATTNRES_MODULE)
    stack, W, c, h1, g = _block(module, device, convention="l2", eps=EPS, learned_gain=True, mode=mode)
    written = {name: torch.randn(p.shape, generator=g, dtype=F64) * (0.5 if "gain" in name else 1.0)
               + (1.0 if "gain" in name else 0.0) for name, p in stack.named_parameters()}
    with torch.no_grad():
        for name, p in stack.named_parameters():
            p.copy_(written[name].to(device))
        out = stack(h1.to(device))
    oracle = stack_forward(h1.tolist(), [affine(W[l].tolist(), c[l].tolist()) for l in range(4)], 2,
                           written["queries"].tolist(), written["output_query"].tolist(), mpmath.mpf(EPS), "l2",
                           written["gains"].tolist(), written["output_gain"].tolist())
    expected = torch.tensor([float(v) for v in oracle["out"]], dtype=F64, device=device)
    assert_close(out, expected, _option_tol(expected),
                 what=f"BlockAttnRes(L=4, N=2, convention='l2', eps={EPS}, learned_gain=True, mode={mode!r}) with "
                      "written queries and gains, against the oracle at those options")


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4"], mechanism="block_attnres", targets=[ATTNRES_MODULE])
@pytest.mark.parametrize("route", ["autograd", "manual"])
def test_block_attnres_runs_the_gradient_route_it_was_built_with(subject, device, route):
    module = _reference(subject, ATTNRES_MODULE)
    stack, _, _, h1, _ = _block(module, device, backward=route)
    node = type(stack(h1.to(device).requires_grad_(True)).grad_fn).__name__
    ran_manual = node == "_DepthAttendManualBackward"
    assert_bound(int(ran_manual != (route == "manual")), at_most=0, reading_name="route_not_taken",
                 what=f"BlockAttnRes(backward={route!r}) must run that route: its output's autograd node is {node}")


def _nested(t: torch.Tensor):
    return t.item() if t.dim() == 0 else t.tolist()


@pytest.mark.gate(equations=["attnres.loop.config", "attnres.eq2", "mhc.eq7", "mhc.eq9", "mhc.init_dynamic"],
                  mechanism="loop_model", targets=[LOOP_MODULE])
@pytest.mark.parametrize("arm", sorted(LOOP_CONFIGS))
def test_the_loop_model_built_off_its_defaults_is_the_oracle_at_its_own_config(subject, device, arm):
    module = _reference(subject, LOOP_MODULE)
    config = module.LoopConfig(vocab=3, d=2, T=2, hidden_mult=1, **LOOP_CONFIGS[arm])
    model = module.LoopModel(config, torch.Generator().manual_seed(331), dtype=F64, device=device)
    g = torch.Generator().manual_seed(332)
    with torch.no_grad():
        model.attnres_queries.copy_(torch.randn(model.attnres_queries.shape, generator=g, dtype=F64).to(device))
        logits = torch.stack(model(torch.tensor([1], device=device)))[:, 0]
    params = {name: _nested(p.detach().cpu()) for name, p in model.named_parameters()}
    oracle = loop_logits(1, params, {k: getattr(config, k) for k in config.__dataclass_fields__})
    expected = torch.tensor([[float(v) for v in row] for row in oracle], dtype=F64, device=device)
    assert_close(logits, expected, _option_tol(expected),
                 what=f"the loop model's logits with {LOOP_CONFIGS[arm]}, against the oracle at that config")
