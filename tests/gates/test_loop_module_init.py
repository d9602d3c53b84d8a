"""Gates (init_through_module): the loop model's init, read from the parameters the factory created.

Nothing here is supplied by the gate: the model is factory(config, generator) and every number is read
from it. Two kinds of promise (fidelity.mechanisms.loop_model, attnres.loop.init.*):

Exact inits, at LoopConfig() (one instance per parameter): residual_scale = 1 (attnres.loop.init.residual_scale),
attnres_queries = 0 (attnres.init_zero_query), and the arms built inside the loop: mhc.phi_* = 0
(attnres.loop.mhc_dynamic_init_std = 0), mhc.alpha_* = 0.01 (mhc.table5.alpha_init), mhc.b_pre = 10, mhc.b_res =
10 I (mhc.init_static_bias), mhc.b_post = 0; hc.static_beta = 1, hc.static_alpha = [e_0 | I] (layer index 0),
hc.dynamic_* = 0 (hc.eq14). The spec's numbers are read with spec_value, never typed here.

Random inits, at a larger config (vocab 512, d 64, T 64, hidden 128) so the bands are narrow, each bound
stated from the distribution at the size used (n = the number of entries):
- Normal(0, s^2) (embed s = 1, iter_embed s = 0.1): r = mean(x^2) / s^2 is chi^2_n / n, mean 1, sd sqrt(2/n);
  |r - 1| <= 6 sqrt(2/n) (iter_embed n = 4096: 0.133; embed n = 32768: 0.047) and |mean| <= 6 s / sqrt(n).
- Uniform(-b, b), b = fan_in^(-1/2) (attnres.loop.init.uniform_exponent): max|w| <= b (1 + 2^-23: b is rounded
  to float32 once); max|w| >= b 10^(-9/n) (all n draws inside that has probability 1e-9; n = 64 for body_b2:
  0.72 b, n = 8192: 0.9975 b); r = mean(w^2) / (b^2/3) has sd sqrt(0.8/n): |r - 1| <= 6 sqrt(0.8/n); the mean
  has sd b / sqrt(3n): |mean| <= 6 b / sqrt(3n) (a one-sided Uniform(-b, 0) has the same |w| law, not the mean).
The 6-sd bands are exceeded with probability below 1e-8 at these n (chi^2 skewness sqrt(8/n) <= 0.05).
"""
import math

import pytest
import torch

from fidelity.gates.compare import assert_bound
from fidelity.mechanisms.loop_model import config_class
from fidelity.spec.values import spec_value

BIG = dict(vocab=512, d=64, T=64)
SEED = 20260
EQUATIONS = ["attnres.placement_loop", "attnres.loop.config"]


def build(subject, device, **config):
    factory = subject.get("loop_model")
    config_type = config_class(factory)
    return factory(config_type(**config), torch.Generator().manual_seed(SEED), device=device)


def _exact_inits(model):
    """name -> (the tensor the init must equal, the spec equation)."""
    cfg = model.config
    d, T, n, m = cfg.d, cfg.T, cfg.mhc_streams, cfg.hc_streams
    nC = d if cfg.mhc_layout == "sliced" else n * d
    static, alpha = spec_value("mhc.init_static_bias"), spec_value("mhc.table5.alpha_init")
    phi = spec_value("attnres.loop.mhc_dynamic_init_std")  # std 0: every phi entry is exactly 0
    a_m = torch.zeros(m, 1, dtype=torch.float64)
    a_m[0, 0] = 1.0  # hc.eq14 at layer index 0: A_m = e_0
    return {
        "residual_scale": (torch.tensor(float(spec_value("attnres.loop.init.residual_scale"))),
                           "attnres.loop.init.residual_scale"),
        "attnres_queries": (torch.full((T, d), float(spec_value("attnres.init_zero_query"))), "attnres.init_zero_query"),
        "mhc.phi_pre": (torch.full((nC, n), float(phi)), "attnres.loop.mhc_dynamic_init_std"),
        "mhc.phi_post": (torch.full((nC, n), float(phi)), "attnres.loop.mhc_dynamic_init_std"),
        "mhc.phi_res": (torch.full((nC, n * n), float(phi)), "attnres.loop.mhc_dynamic_init_std"),
        "mhc.alpha_pre": (torch.tensor(float(alpha)), "mhc.table5.alpha_init"),
        "mhc.alpha_post": (torch.tensor(float(alpha)), "mhc.table5.alpha_init"),
        "mhc.alpha_res": (torch.tensor(float(alpha)), "mhc.table5.alpha_init"),
        "mhc.b_pre": (torch.full((n,), float(static)), "mhc.init_static_bias"),
        "mhc.b_post": (torch.zeros(n), "mhc.init_static_bias"),
        "mhc.b_res": (float(static) * torch.eye(n), "mhc.init_static_bias"),
        "hc.static_beta": (torch.ones(m), "hc.eq14"),
        "hc.static_alpha": (torch.cat([a_m, torch.eye(m, dtype=torch.float64)], dim=1), "hc.eq14"),
        "hc.dynamic_alpha_fn": (torch.zeros(d, m + 1), "hc.eq14"),
        "hc.dynamic_beta_fn": (torch.zeros(d), "hc.eq14"),
    }


EXACT = ["residual_scale", "attnres_queries", "mhc.phi_pre", "mhc.phi_post", "mhc.phi_res", "mhc.alpha_pre",
         "mhc.alpha_post", "mhc.alpha_res", "mhc.b_pre", "mhc.b_post", "mhc.b_res", "hc.static_beta",
         "hc.static_alpha", "hc.dynamic_alpha_fn", "hc.dynamic_beta_fn"]


@pytest.mark.gate(equations=EQUATIONS + ["attnres.loop.init.residual_scale", "attnres.init_zero_query",
                                         "mhc.init_static_bias", "mhc.table5.alpha_init", "mhc.init_dynamic", "hc.eq14"],
                  mechanism="loop_model", gate_class="init_through_module")
@pytest.mark.parametrize("name", EXACT)
def test_each_exact_init_of_the_default_model_is_the_spec_value(subject, device, name):
    """model = factory(LoopConfig(), generator); parameter `name` equals its stated init exactly (the value is
    represented exactly in float32 or is the float32 rounding of 0.01 for alpha, compared after the same rounding).
    Reading: max |param - init| (must be 0)."""
    model = build(subject, device)
    want, eq = _exact_inits(model)[name]
    params = dict(model.named_parameters())
    if name not in params:
        assert_bound(1, at_most=0, reading_name="missing", what=f"the default model has no parameter {name!r}")
    got = params[name].detach()
    want = want.to(dtype=got.dtype, device=got.device)
    diff = float((got.double() - want.double()).abs().max()) if got.shape == want.shape else math.inf
    assert_bound(diff, at_most=0.0, reading_name="max_abs_diff",
                 what=f"{name} at init (shape {tuple(got.shape)}, want {tuple(want.shape)}) against {eq}")


NORMAL = {"embed": "attnres.loop.init.embed_std", "iter_embed": "attnres.loop.init.iter_embed_std"}
UNIFORM = {"body_w1": "d", "body_b1": "d", "readout_w": "d", "readout_b": "d", "body_w2": "hd", "body_b2": "hd"}


@pytest.mark.gate(equations=EQUATIONS + ["attnres.loop.init.embed_std", "attnres.loop.init.iter_embed_std"],
                  mechanism="loop_model", gate_class="init_through_module")
@pytest.mark.parametrize("statistic", ["mean_square", "mean"])
@pytest.mark.parametrize("name", list(NORMAL))
def test_normal_inits_have_the_spec_std(subject, device, name, statistic):
    """`name` ~ Normal(0, s^2) with s the spec's value, at vocab 512, d 64, T 64: mean(x^2)/s^2 within
    1 +- 6 sqrt(2/n), and |mean| <= 6 s / sqrt(n). Reading: the statistic."""
    model = build(subject, device, **BIG)
    x = dict(model.named_parameters())[name].detach().double().cpu().reshape(-1)
    s, n = float(spec_value(NORMAL[name])), x.numel()
    if statistic == "mean_square":
        band = 6 * math.sqrt(2 / n)
        assert_bound(float((x ** 2).mean()) / s ** 2, at_least=1 - band, at_most=1 + band, reading_name="ms_ratio",
                     what=f"{name}: mean(x^2)/s^2 over n = {n} draws, s = {s} ({NORMAL[name]})")
    else:
        assert_bound(abs(float(x.mean())), at_most=6 * s / math.sqrt(n), reading_name="abs_mean",
                     what=f"{name}: |mean| over n = {n} draws of Normal(0, {s}^2)")


@pytest.mark.gate(equations=EQUATIONS + ["attnres.loop.init.uniform_exponent"], mechanism="loop_model",
                  gate_class="init_through_module")
@pytest.mark.parametrize("statistic", ["max_at_most_b", "max_near_b", "mean_square", "mean"])
@pytest.mark.parametrize("name", list(UNIFORM))
def test_uniform_inits_have_the_fan_in_bound(subject, device, name, statistic):
    """`name` ~ Uniform(-b, b), b = fan_in^(-1/2) (fan_in d, or hidden_mult d for body_w2, body_b2), at vocab 512,
    d 64, T 64: max|w| <= b (1 + 2^-23), max|w| >= b 10^(-9/n), mean(w^2)/(b^2/3) within 1 +- 6 sqrt(0.8/n),
    |mean| <= 6 b / sqrt(3n)."""
    model = build(subject, device, **BIG)
    cfg = model.config
    fan_in = cfg.d if UNIFORM[name] == "d" else cfg.hidden_mult * cfg.d
    b = fan_in ** float(spec_value("attnres.loop.init.uniform_exponent"))
    w = dict(model.named_parameters())[name].detach().double().cpu().reshape(-1)
    n, top = w.numel(), float(w.abs().max())
    what = f"{name} (n = {n}, fan_in = {fan_in}, b = {b:.6g})"
    if statistic == "max_at_most_b":
        assert_bound(top / b, at_most=1 + 2 ** -23, reading_name="max_over_b", what=f"{what}: max|w| / b")
    elif statistic == "max_near_b":
        assert_bound(top / b, at_least=10 ** (-9 / n), reading_name="max_over_b",
                     what=f"{what}: max|w| / b, below 10^(-9/n) with probability 1e-9")
    elif statistic == "mean":
        assert_bound(abs(float(w.mean())) / b, at_most=6 / math.sqrt(3 * n), reading_name="abs_mean_over_b",
                     what=f"{what}: |mean| / b")
    else:
        band = 6 * math.sqrt(0.8 / n)
        assert_bound(float((w ** 2).mean()) / (b ** 2 / 3), at_least=1 - band, at_most=1 + band,
                     reading_name="ms_ratio", what=f"{what}: mean(w^2) / (b^2/3)")
