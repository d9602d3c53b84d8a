"""Gates (defaults_as_shipped): the loop model as a user gets it from LoopConfig() and the factory.

The config is built with NO argument, the model with the config and a generator only (plus the device,
and, for the float64 comparison, the dtype: the spec fixes no dtype). Three promises:
- each LoopConfig() field equals the spec's default (fixture loop_model.defaults, params.defaults: the
  numbers are the `value:` of attnres.loop.*, attnres.eps, mhc.table5.eps, mhc.table5.tmax; the string
  choices those of attnres.loop.config), one instance per field;
- the model builds its arms with the config's values: mhc.n, mhc.C, mhc.layout (interface attributes),
  mhc.eps and mhc.t_max (read where the module exposes them; a subject without them is NotRun for those),
  hc.n, hc.d, hc.layer_index, hc.dynamic, read from the built submodules, and the parameters' dtype against the
  factory's documented default (float32), one instance per attribute;
- the default model, its parameters set to the fixture's seeded values (the init hides eps, t_max and the
  dynamic coefficients: phi = 0, b_res = 10 I), gives the oracle's logits at the spec's defaults for every
  arm (set_arm on the one model). The fixture's derivation states how far a wrong default moves them
  (mhc_eps 1e-6: 5.1e-7; t_max 10: 3.0e-3; attnres_eps 1e-5: 9.2e-6), all far above the tolerance in float64.

Tolerance of the logits: T = 3 iterations of a few dozen roundings each (20 Sinkhorn steps in the mHC arm),
logits O(1): 256 eps relative with floor 1 (measured, worst arm HC: 11 eps in float64, 15 eps in float32;
the other arms <= 2 eps).
"""

import pytest
import sympy
import torch

from fidelity.fixtures.loop_modules import CHOICE_DEFAULTS, NUMERIC_DEFAULTS
from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.fixture_values import expected, fixture
from fidelity.mechanisms.docs import as_dict
from fidelity.mechanisms.loop_model import MECHANISM
from fidelity.mechanisms.loop_model import config_class
from fidelity.subjects.subject import NotRun

FIXTURE = "loop_model.defaults"
ARMS = ("rezero", "attnres", "mhc", "hc")
FIELDS = tuple(NUMERIC_DEFAULTS) + tuple(CHOICE_DEFAULTS)
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
LOGITS_TOL = Tolerance(eps_multiple=256, floor=1.0)
EQUATIONS = ["attnres.loop.config", "attnres.placement_loop", "attnres.eps", "mhc.table5.eps", "mhc.table5.tmax"]
# the config fields whose only home is the spec's value (the gate over the fields holds each)
FIELD_EQUATIONS = ["attnres.loop.vocab", "attnres.loop.d", "attnres.loop.T", "attnres.loop.hidden_mult",
                   "attnres.loop.mhc_streams", "attnres.loop.hc_streams", "attnres.loop.hc_dynamic",
                   "attnres.loop.mhc_dynamic_init_std"]


def config_type(subject):
    factory = subject.get("loop_model")
    return factory, config_class(factory)


def spec_default(field):
    """The spec's default: a string or bool as stored, a number as an exact sympy Rational."""
    raw = fixture(FIXTURE)["params"]["defaults"][field]
    if isinstance(raw, dict):
        return sympy.Rational(raw["exact"])
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return sympy.Rational(repr(raw))
    return raw


def same_default(got, want) -> bool:
    """A string or bool by equality; a number by the decimal it prints as against the spec's exact value."""
    if isinstance(want, sympy.Rational):
        return isinstance(got, (int, float)) and not isinstance(got, bool) and sympy.Rational(repr(got)) == want
    return type(got) is type(want) and got == want


def load_fixture_params(model, dtype, device):
    """Copy the fixture's parameters into the model's own (by name); the names must be the model's."""
    params = fixture(FIXTURE)["inputs"]["params"]
    named = dict(model.named_parameters())
    missing = sorted(set(params) ^ set(named))
    assert_bound(len(missing), at_most=0, reading_name="parameter_names_that_differ",
                 what=f"the default model's parameters against the fixture's (attnres.loop.config): {missing}")
    with torch.no_grad():
        for name, raw in params.items():
            value = torch.tensor(raw["float64"] if isinstance(raw, dict) else raw, dtype=torch.float64)
            named[name].copy_(value.to(dtype=dtype, device=device))


@pytest.mark.gate(equations=EQUATIONS + FIELD_EQUATIONS, mechanism="loop_model", gate_class="defaults_as_shipped")
@pytest.mark.parametrize("field", FIELDS)
def test_each_loop_config_default_is_the_spec_value(subject, device, field):
    """LoopConfig()'s `field` equals the spec's value (reading: 0 when equal, 1 otherwise)."""
    _, config = config_type(subject)
    built = config()
    got, want = getattr(built, field, None), spec_default(field)
    eq = NUMERIC_DEFAULTS.get(field, "attnres.loop.config")
    assert_bound(0 if same_default(got, want) else 1, at_most=0, reading_name="default_differs",
                 what=f"LoopConfig().{field} = {got!r}, the spec's {eq} gives {want!r}")


def _arm_attributes(config):
    n = config.mhc_streams
    return {
        "mhc.n": ("mhc", "n", n),
        "mhc.C": ("mhc", "C", config.d // n if config.mhc_layout == "sliced" else config.d),
        "mhc.layout": ("mhc", "layout", config.mhc_layout),
        "mhc.eps": ("mhc", "eps", config.mhc_eps),
        "mhc.t_max": ("mhc", "t_max", config.sinkhorn_t_max),
        "hc.n": ("hc", "n", config.hc_streams),
        "hc.d": ("hc", "d", config.d),
        "hc.layer_index": ("hc", "layer_index", 0),
        "hc.dynamic": ("hc", "dynamic", config.hc_dynamic),
        "parameters.dtype": (None, "dtype", _documented_default_dtype()),
    }


def _documented_default_dtype():
    """The factory's documented default dtype (fidelity show mechanism:loop_model), e.g. torch.float32."""
    [arg] = [a for a in as_dict(MECHANISM)["interface"]["call"]["arguments"] if a["name"] == "dtype"]
    return getattr(torch, arg["default"].removeprefix("torch."))


@pytest.mark.gate(equations=EQUATIONS + ["mhc.eq7", "mhc.eq9", "hc.eq5"], mechanism="loop_model",
                  gate_class="defaults_as_shipped")
@pytest.mark.parametrize("attribute", ["mhc.n", "mhc.C", "mhc.layout", "mhc.eps", "mhc.t_max", "hc.n", "hc.d",
                                       "hc.layer_index", "hc.dynamic", "parameters.dtype"])
def test_the_default_model_builds_its_arms_with_the_config_values(subject, device, attribute):
    """LoopModel(LoopConfig(), generator): the built submodule's `attribute` is the config's value
    (the spec's default, by the field gate above). Reading: 0 when equal."""
    factory, config = config_type(subject)
    built = config()
    model = factory(built, torch.Generator().manual_seed(0), device=device)
    sub, attr, want = _arm_attributes(built)[attribute]
    if sub is None:  # read from the parameters, not the output (the output contract refuses an undeclared dtype)
        dtypes = sorted({str(p.dtype) for p in model.parameters()})
        assert_bound(0 if dtypes == [str(want)] else 1, at_most=0, reading_name="attribute_differs",
                     what=f"the default model's parameter dtypes {dtypes}, the interface documents {want}")
        return
    module = getattr(model, sub)
    if not hasattr(module, attr):
        raise NotRun(f"the loop model's {sub} module exposes no {attr!r}; its effect is held by the oracle gate")
    got = getattr(module, attr)
    assert_bound(0 if same_default(got, want) else 1, at_most=0, reading_name="attribute_differs",
                 what=f"model.{attribute} = {got!r}, the config's value is {want!r}")


@pytest.mark.gate(equations=EQUATIONS + ["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", "hc.eq5", "attnres.eq2"],
                  mechanism="loop_model", gate_class="defaults_as_shipped")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("arm", ARMS)
def test_the_default_model_is_the_oracle_at_the_spec_defaults(subject, device, arm, dtype):
    """The logits of every iteration, arm `arm`, of the model built from LoopConfig() (parameters set to the
    fixture's), against the oracle at the spec's defaults. float32 is the shipped dtype (no dtype argument);
    float64 is where eps-sized defaults show. Reading: the worst relative error (floor 1)."""
    factory, config = config_type(subject)
    kwargs = {} if dtype == torch.float32 else {"dtype": dtype}
    model = factory(config(), torch.Generator().manual_seed(0), device=device, **kwargs)
    load_fixture_params(model, dtype, device)
    model.set_arm(arm)
    toks = torch.tensor(fixture(FIXTURE)["inputs"]["tokens"], dtype=torch.int64, device=device)
    with torch.no_grad():
        logits = torch.stack(list(model(toks)))
    want = expected(FIXTURE, f"logits_{arm}", dtype, device)
    assert_close(logits, want, LOGITS_TOL, dtype=dtype,
                 what=f"{arm} arm of the default model, every iteration's logits against the oracle")
