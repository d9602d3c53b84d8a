"""Gates: which parameters of the loop model's mHC arm train (reachability is not training).

Per parameter, not "the loss has a gradient": a detached write hides in the aggregate.
Every WIRED parameter must get a non-zero, finite gradient; every other one must get NONE
(grad is None: it is not in the graph at all, rather than a zero that could be an accident).

Inputs are chosen so that no zero gradient is legitimate (README, Design: gradients: a constant input can
make a gradient legitimately zero):
- tokens and cross-entropy targets are random (seeded), so the loss is not constant;
- mhc_dynamic_init_std = 0.01: with phi = 0 (the default init) the alphas' gradient is
  legitimately ZERO (their term is alpha * (x' phi) = alpha * 0), so phi is moved off zero;
- in the paper layout the n streams start as replicated copies of h, and with equal H_post
  they would stay equal, which makes H_res x = h whatever H_res is (rows sum to 1): b_res
  would legitimately get no gradient (measured: 1e-8 from phi_post's 1e-4-sized spread
  alone). b_post = [-1/2, 1/2] makes H_post differ per stream, so the streams separate at
  the first write (b_res's gradient: 1.8e-5). The sliced layout's streams are distinct slices;
  the same b_post is used there for one setting throughout.
Wired in the mHC arm: embed, iter_embed, body_*, readout_*, and mhc.{phi,alpha,b}_{post,res};
mhc.{phi,alpha,b}_pre too in the paper layout, but NOT in the sliced one (H_pre is computed
and never read: source 004 section 3.3). Never wired in the mHC arm: residual_scale (ReZero's
knob), attnres_queries, hc.*.

The other arms (second gate): rezero wires SHARED + residual_scale; attnres SHARED + attnres_queries; HC
SHARED + hc.static_{beta,alpha} and, when dynamic, hc.dynamic_{alpha,beta}_fn, hc.{alpha,beta}_scale and
hc.layer_norm.{weight,bias}. At HC's init W = 0, so s_alpha, s_beta and the LayerNorm's affine legitimately get
ZERO gradient (their term is s tanh(H_bar 0) = 0): W is moved off zero by a seeded Normal(0, 0.1^2) draw.
The cotangent is a seeded normal draw on every iteration's logits (fidelity.gates.gradient_reach).
"""
import math

import pytest
import torch
from torch.nn import functional as F

from fidelity.gates import readings
from fidelity.gates.compare import assert_bound
from fidelity.gates.gradient_reach import assert_gradients_reach
from fidelity.mechanisms.loop_model import config_class

DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
SHARED = ("embed", "iter_embed", "body_w1", "body_b1", "body_w2", "body_b2", "readout_w", "readout_b")
MHC_POST_RES = tuple(f"mhc.{p}_{h}" for h in ("post", "res") for p in ("phi", "alpha", "b"))
MHC_PRE = tuple(f"mhc.{p}_pre" for p in ("phi", "alpha", "b"))
STREAM_SEPARATING_B_POST = [-0.5, 0.5]  # H_post = 2 sigma(b_post) = [0.76, 1.24]: unequal streams


def wired(layout: str) -> set[str]:
    return set(SHARED) | set(MHC_POST_RES) | (set(MHC_PRE) if layout == "paper" else set())


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.layout.sliced", "mhc.layout.replicated"],
                  mechanism="loop_model", gate_class="gradient_reach")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ["autograd", "manual"])
@pytest.mark.parametrize("layout", ["sliced", "paper"])
def test_every_wired_parameter_gets_a_gradient_and_no_other_does(subject, device, dtype, backward, layout):
    """One backward of a cross-entropy over EVERY iteration's readout, mHC arm, at init (b_res = 10 I).

    Readings: `reading` = the number of wired parameters without a non-zero finite gradient
    (must be 0), then the number of unwired parameters that got any gradient (must be 0);
    `smallest_wired_grad` = the smallest max|grad| over wired parameters (b_res's, ~e^-10 scaled:
    the map is stiff at 10 I, source 004 section 5.3b).
    """
    if not subject.supports("loop_model", backward):
        pytest.skip(f"subject {subject.name} has no {backward!r} backward route for loop_model")
    factory = subject.get("loop_model")
    config_type = config_class(factory)
    route = {}
    if backward != "autograd":
        if "sinkhorn_backward" not in getattr(config_type, "__dataclass_fields__", {}):
            pytest.skip(f"subject {subject.name}'s loop config offers no way to select the {backward!r} route")
        route = {"sinkhorn_backward": backward}
    config = config_type(arm="mhc", mhc_streams=2, mhc_layout=layout, mhc_dynamic_init_std=0.01, **route)
    model = factory(config, torch.Generator().manual_seed(5), dtype=dtype, device=device)
    with torch.no_grad():
        model.mhc.b_post.copy_(torch.tensor(STREAM_SEPARATING_B_POST, dtype=dtype, device=device))
    g = torch.Generator().manual_seed(6)
    toks = torch.randint(0, config.vocab, (2, 5), generator=g).to(device)
    targets = torch.randint(0, config.vocab, (config.T, 2, 5), generator=g).to(device)
    logits = model(toks)
    loss = sum(F.cross_entropy(l.reshape(-1, config.vocab), t.reshape(-1)) for l, t in zip(logits, targets))
    loss.backward()
    params = dict(model.named_parameters())
    want = wired(layout)
    missing, sizes = [], {}
    for name in sorted(want):
        if name not in params:
            missing.append((name, "not a parameter of the model"))
            sizes[name] = math.nan
            continue
        grad = params[name].grad
        size = math.nan if grad is None else float(grad.detach().abs().max())
        sizes[name] = size
        if grad is None or not bool(torch.isfinite(grad).all()) or not size > 0:
            missing.append((name, "None" if grad is None else f"max|grad| = {size:.3g}"))
    smallest = min(sizes, key=lambda k: sizes[k] if not math.isnan(sizes[k]) else -1.0)
    readings.record(0.0 if math.isnan(sizes[smallest]) else sizes[smallest], "smallest_wired_grad")
    assert_bound(len(missing), at_most=0,
                 what=f"{layout} layout: wired parameters without a non-zero finite gradient: {missing}")
    leaked = sorted(name for name, p in params.items() if name not in want and p.grad is not None)
    assert_bound(len(leaked), at_most=0,
                 what=f"{layout} layout: parameters outside the mHC arm's graph that got a gradient: {leaked}")


SHARED_PLUS = {
    "rezero": (dict(arm="rezero"), SHARED + ("residual_scale",)),
    "attnres": (dict(arm="attnres"), SHARED + ("attnres_queries",)),
    "hc_dynamic": (dict(arm="hc", hc_dynamic=True),
                   SHARED + ("hc.static_beta", "hc.static_alpha", "hc.dynamic_alpha_fn", "hc.dynamic_beta_fn",
                             "hc.alpha_scale", "hc.beta_scale", "hc.layer_norm.weight", "hc.layer_norm.bias")),
    "hc_static": (dict(arm="hc", hc_dynamic=False), SHARED + ("hc.static_beta", "hc.static_alpha")),
}


@pytest.mark.gate(equations=["attnres.placement_loop", "attnres.eq2", "attnres.init_zero_query", "hc.eq5"],
                  mechanism="loop_model", gate_class="gradient_reach")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("graph", list(SHARED_PLUS))
def test_every_wired_parameter_of_the_other_arms_gets_a_gradient_and_no_other_does(subject, device, dtype, graph):
    """Rezero, AttnRes and HC arms at init (HC's W moved off zero): every wired parameter gets a non-zero
    gradient, every other one none. Readings: `dead_gradients` (must be 0), then the unwired parameters that
    got a gradient (must be 0)."""
    overrides, wired_names = SHARED_PLUS[graph]
    factory = subject.get("loop_model")
    config_type = config_class(factory)
    config = config_type(**overrides)
    model = factory(config, torch.Generator().manual_seed(5), dtype=dtype, device=device)
    params = dict(model.named_parameters())
    absent = sorted(set(wired_names) - set(params))
    assert_bound(len(absent), at_most=0, reading_name="absent", what=f"{graph}: wired parameters the model lacks: {absent}")
    g = torch.Generator().manual_seed(6)
    if overrides.get("hc_dynamic"):
        with torch.no_grad():
            for name in ("hc.dynamic_alpha_fn", "hc.dynamic_beta_fn"):
                params[name].copy_(0.1 * torch.randn(params[name].shape, generator=g, dtype=torch.float64).to(
                    device=device, dtype=dtype))
    toks = torch.randint(0, config.vocab, (2, 5), generator=g).to(device)
    assert_gradients_reach(lambda: tuple(model(toks)), {name: params[name] for name in wired_names},
                           what=f"{graph} arm of the loop model, one backward from every iteration's logits")
    leaked = sorted(name for name, p in params.items() if name not in wired_names and p.grad is not None)
    assert_bound(len(leaked), at_most=0, reading_name="leaked",
                 what=f"{graph} arm: parameters outside its graph that got a gradient: {leaked}")
