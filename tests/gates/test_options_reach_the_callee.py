"""Gates: every option a reference module takes, set away from its default, reaches the code that uses it.

mutmut 3.8.1 on depth_attention.py and mhc.py (issue 50) left 8 genuine survivors, all one class: an
option the constructor stores (`self.eps`, `self.t_max`, `self.sinkhorn_backward`, ...) but a call drops
on the way to the callee, whose own default then runs. Every gate built the module at its defaults, so
the callee's default and the module's were the same value and nothing could tell. `fidelity discover`'s
forwarded-argument operators (fidelity/discover/operators/forwarding.py) now make those mutants; these
gates kill them. Each builds the module with EVERY forwarded option off its default at once and holds
the result to the oracle evaluated at those options (so any one option dropped, or passed as None, is
the oracle at another value), or, for a gradient route (equal values either way), to the route asked for.

1. DepthAttention(d, convention, eps, learned_gain) against fidelity.oracles.block_attnres.depth_mix at
   that convention, eps and gain. Sources of size ~0.3 (sum v^2 ~ 0.4) beside eps = 0.25: eps dropped to
   1e-6 moves every score by O(1); the gain is written off its ones init, the query off its zero init.
2. DepthAttention(d, backward=route): its outputs come from the route asked for (the manual route's
   autograd node is `_DepthAttendManualBackward`; the values of both routes agree, so only the graph shows).
3. MhcResidual(n, C, layout, eps, t_max, dynamic_init_std, generator, alpha_init, static_init) against
   fidelity.oracles.mhc.residual_mpf at that eps and t_max with the module's own parameters and a linear
   body: eps = 0.5 beside mean(x^2) ~ 0.25 (eps dropped to 1e-20 changes x' by ~2x), t_max = 2 with
   static_init 0.5 (H~res far from doubly stochastic: t_max dropped to 20 moves H_res by ~1e-2).
4. MhcResidual(..., sinkhorn_backward=route): H_res comes from the route asked for (`_SinkhornManualBackward`).
5. depth_attend(..., gain=g) hands g to its input check: a [1] gain and a float32 gain for float64 sources
   are refused (ValueError, TypeError) rather than broadcast or promoted (mutmut's survivor passed None there).
6. MhcResidual(..., dynamic_init_std > 0, generator=G): the draws come from G alone: two equal seeds give
   the same phi bits, and the global RNG is not advanced (a generator dropped on the way draws from it).

These modules are the torch subject's own code (as in test_depth_attention_module_contract.py): other
subjects skip them. Tolerance: 64 eps relative (float64), as the module-level oracle gates of each mechanism
(a softmax or a Sinkhorn of a handful of roundings per entry); a dropped option moves the outputs by
>= 1e-4 relative (seen under P320..P326), ~1e12 tolerances away.
"""
from __future__ import annotations

import importlib

import mpmath
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.refusals import assert_behaves_as_documented
from fidelity.oracles import mhc as mhc_oracle
from fidelity.oracles.block_attnres import depth_mix

DEPTH_MODULE = "fidelity.impl.torch.depth_attention"
MHC_MODULE = "fidelity.impl.torch.mhc"
F64 = torch.float64
# 64 eps of the output's scale (its largest element), not of each element: an element that cancels to a small
# value keeps the rounding of the O(1) terms it came from, which a faithful variant summing in another order
# moves (drawing phi_post and phi_res in the other order, or iter_embed as randn * -0.1, read 13.7x and
# 1.01x a bound taken relative to each element). A value not reaching its callee moves the output by O(1).
OPTION_EPS_MULTIPLE = 64
DEPTH_EPS = 0.25  # off the default 1e-6, beside sum(v^2) ~ 0.4 of the sources
MHC_OPTIONS = dict(eps=0.5, t_max=2, dynamic_init_std=0.5, alpha_init=0.5, static_init=0.5)  # all off their defaults
ROUTES = ("autograd", "manual")


def _option_tol(expected: torch.Tensor) -> Tolerance:
    return Tolerance(eps_multiple=OPTION_EPS_MULTIPLE, floor=float(expected.abs().max()))


def _reference(subject, name: str):
    if subject.name != "torch":
        pytest.skip(f"{name} is the torch subject's own module; subject {subject.name} is held to the mechanism "
                    "through its interface by the other gates")
    return importlib.import_module(name)


def _mp_list(t: torch.Tensor):
    return [[mpmath.mpf(v) for v in row] for row in t.tolist()] if t.dim() == 2 else [mpmath.mpf(v) for v in t.tolist()]


def _mp_tensor(values, device) -> torch.Tensor:
    return torch.tensor([[float(v) for v in row] for row in values] if isinstance(values[0], list)
                        else [float(v) for v in values], dtype=F64, device=device)


# --- depth attention ----------------------------------------------------------------------------


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4", "attnres.eps", "attnres.score_conventions",
                             "attnres.rmsnorm_gain"], mechanism="depth_attention", targets=[DEPTH_MODULE])
@pytest.mark.parametrize("convention", ["l2", "l2_sqrt_d"])
def test_depth_attention_built_off_every_default_is_the_oracle_at_its_own_options(subject, device, convention):
    module = _reference(subject, DEPTH_MODULE)
    g = torch.Generator().manual_seed(320)
    sources = 0.3 * torch.randn(3, 4, generator=g, dtype=F64)
    query, gain = torch.randn(4, generator=g, dtype=F64), 1.0 + 0.5 * torch.randn(4, generator=g, dtype=F64)
    attend = module.DepthAttention(4, convention=convention, eps=DEPTH_EPS, learned_gain=True, dtype=F64,
                                   device=device)
    with torch.no_grad():
        attend.query.copy_(query.to(device))
        attend.gain.copy_(gain.to(device))
        h, alpha = attend(sources.to(device))
    oracle = depth_mix(sources.tolist(), query.tolist(), mpmath.mpf(DEPTH_EPS), convention, gain.tolist())
    expected = _mp_tensor(oracle["alpha"] + oracle["h"], device)
    assert_close(torch.cat([alpha, h]), expected, _option_tol(expected),
                 what=f"[alpha, h] of DepthAttention(4, convention={convention!r}, eps={DEPTH_EPS}, learned_gain=True) "
                      "with a written gain, against the oracle at those options")


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4"], mechanism="depth_attention", targets=[DEPTH_MODULE])
@pytest.mark.parametrize("route", ROUTES)
def test_depth_attention_runs_the_gradient_route_it_was_built_with(subject, device, route):
    module = _reference(subject, DEPTH_MODULE)
    attend = module.DepthAttention(4, backward=route, dtype=F64, device=device)
    sources = torch.randn(3, 4, generator=torch.Generator().manual_seed(321), dtype=F64).to(device)
    h, alpha = attend(sources.requires_grad_(True))
    nodes = {type(t.grad_fn).__name__ for t in (h, alpha)}
    ran_manual = nodes == {"_DepthAttendManualBackward"}
    assert_bound(int(ran_manual != (route == "manual")), at_most=0, reading_name="route_not_taken",
                 what=f"DepthAttention(4, backward={route!r}) must run that route: its outputs' autograd nodes are {nodes}")


# case -> (the gain depth_attend gets with float64 sources [3, 4], the error its input check documents)
GAIN_CASES = {
    "gain_of_one_entry": (lambda device: torch.ones(1, dtype=F64, device=device), ValueError),  # broadcasts silently
    "gain_of_another_dtype": (lambda device: torch.ones(4, dtype=torch.float32, device=device), TypeError),  # promotes
}


@pytest.mark.gate(equations=["attnres.rmsnorm_gain", "attnres.eq2"], mechanism="depth_attention",
                  targets=[DEPTH_MODULE])
@pytest.mark.parametrize("case", sorted(GAIN_CASES))
def test_depth_attend_hands_the_gain_to_its_input_check(subject, device, case):
    """mutmut's survivor `check_depth_attention_inputs(sources, query, None)`: the gain never reached the
    check, and a [1] gain (broadcast) or a float32 gain (promoted) ran without a word."""
    module = _reference(subject, DEPTH_MODULE)
    make_gain, error = GAIN_CASES[case]
    g = torch.Generator().manual_seed(326)
    sources = torch.randn(3, 4, generator=g, dtype=F64).to(device)
    query = torch.randn(4, generator=g, dtype=F64).to(device)
    assert_behaves_as_documented(lambda: module.depth_attend(sources, query, gain=make_gain(device)), error, case=case)


# --- the mHC residual ---------------------------------------------------------------------------


def _mhc(module, layout: str, device, **options):
    generator = torch.Generator().manual_seed(322)
    return module.MhcResidual(2, 3, layout=layout, generator=generator, dtype=F64, device=device, **options)


def _mhc_params(residual) -> dict:
    out = {}
    for name, p in residual.named_parameters():
        t = p.detach().cpu()
        out[name] = mpmath.mpf(t.item()) if t.dim() == 0 else _mp_list(t)
    return out


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.init_dynamic"],
                  mechanism="mhc_residual", targets=[MHC_MODULE])
@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_mhc_residual_built_off_every_default_is_the_oracle_at_its_own_eps_and_t_max(subject, device, layout):
    module = _reference(subject, MHC_MODULE)
    residual = _mhc(module, layout, device, **MHC_OPTIONS)
    g = torch.Generator().manual_seed(323)
    x = 0.5 * torch.randn(2, 3, generator=g, dtype=F64)
    width = 3 if layout == "paper" else 6
    W = torch.randn(width, width, generator=g, dtype=F64) / width
    with torch.no_grad():
        out = residual(x.to(device), lambda v: v @ W.to(device).T)
    with mpmath.workdps(40):
        oracle = mhc_oracle.residual_mpf(_mp_list(x), _mhc_params(residual), _mp_list(W), mpmath.mpf(MHC_OPTIONS["eps"]),
                                         MHC_OPTIONS["t_max"], layout=layout)
    expected = _mp_tensor(oracle["out"], device)
    assert_close(out, expected, _option_tol(expected),
                 what=f"MhcResidual(2, 3, layout={layout!r}, {MHC_OPTIONS}) against the oracle at that eps and t_max")


@pytest.mark.gate(equations=["mhc.eq8", "mhc.eq9"], mechanism="mhc_residual", targets=[MHC_MODULE])
@pytest.mark.parametrize("route", ROUTES)
def test_mhc_residual_runs_the_sinkhorn_gradient_route_it_was_built_with(subject, device, route):
    module = _reference(subject, MHC_MODULE)
    residual = _mhc(module, "paper", device, sinkhorn_backward=route)
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(324), dtype=F64).to(device)
    node = type(residual.coefficients(x)[2].grad_fn).__name__
    ran_manual = node == "_SinkhornManualBackward"
    assert_bound(int(ran_manual != (route == "manual")), at_most=0, reading_name="route_not_taken",
                 what=f"MhcResidual(sinkhorn_backward={route!r}) must run that Sinkhorn route: H_res's node is {node}")


@pytest.mark.gate(equations=["mhc.init_dynamic"], mechanism="mhc_residual", targets=[MHC_MODULE],
                  gate_class="init_through_module")
def test_mhc_residual_draws_its_dynamic_init_from_the_generator_it_was_given_alone(subject, device):
    module = _reference(subject, MHC_MODULE)
    torch.manual_seed(325)
    global_state = torch.random.get_rng_state()
    first, second = (_mhc(module, "paper", device, dynamic_init_std=0.5) for _ in range(2))
    differing = [name for name in ("phi_pre", "phi_post", "phi_res")
                 if not torch.equal(getattr(first, name), getattr(second, name))]
    advanced = int(not torch.equal(torch.random.get_rng_state(), global_state))
    assert_bound(len(differing) + advanced, at_most=0, reading_name="draws_not_from_the_generator",
                 what=f"MhcResidual(dynamic_init_std=0.5, generator=G) built twice from equal seeds: phi differing "
                      f"{differing}, global RNG advanced {bool(advanced)}")
