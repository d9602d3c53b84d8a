"""Gates (init through the module): the Block AttnRes parameters as the factory creates them.

Issue 14: an init that is not the paper's (pseudo-queries drawn N(0, 0.02^2) instead of zero)
passed the depth-attention `init_zero_query` gate, because that gate builds its own zero query.
These gates read the parameters from the module the subject's factory built, and never write
the parameter whose init they hold:
- every parameter at its spec value: queries and output_query at attnres.init_zero_query's
  `value: 0` (§5), gains and output_gain (learned_gain=True) at attnres.rmsnorm_gain's `value: 1`,
  exactly (one instance per parameter, so a wrong init of one hides no other);
- the learned gains at init leave the output where the oracle puts it with g = 1: the gate writes
  the pseudo-queries (at zero a gain has no effect on any score) and leaves the gains as built,
  against fixture attnres.module_defaults (computed with no gain).
The zero-query behaviour (each h_l the mean of its sources, h_out the mean of the blocks) is
test_attnres_block.py::test_pseudo_queries_start_at_zero_so_each_sublayer_averages_its_sources.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import expected, fixture, param, value
from fidelity.spec.values import spec_value
from fidelity.subjects.subject import NotRun

MECH = "block_attnres"
FX = "attnres.module_defaults"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]

INIT_OF = {"queries": "attnres.init_zero_query", "output_query": "attnres.init_zero_query",
           "gains": "attnres.rmsnorm_gain", "output_gain": "attnres.rmsnorm_gain"}
"""Each parameter of the interface and the spec equation whose `value:` is its init."""
NEEDS_GAIN = ("gains", "output_gain")  # registered only with learned_gain=True

# An init is exact: |p - value| <= 0 (floor 1, so the bound is absolute and zero).
EXACT = Tolerance(eps_multiple=0, floor=1.0)
# As test_attnres_module_defaults.py: 6 depth attentions through 5 affine sublayers, against the scale.
FORWARD_TOL = Tolerance(eps_multiple=64)


def _affine_sublayers(dtype, device):
    W, c = value(FX, "W", dtype, device), value(FX, "c", dtype, device)
    return [lambda h, W=W[l], c=c[l]: h @ W.T + c for l in range(W.shape[0])]


class _Recorder:
    def __init__(self, fn):
        self.fn, self.inputs = fn, []

    def __call__(self, h):
        self.inputs.append(h.detach())
        return self.fn(h)


@pytest.mark.gate(equations=["attnres.init_zero_query", "attnres.rmsnorm_gain"], mechanism=MECH,
                  gate_class="init_through_module")
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.gate_checks(equation))  # its own equation
                                  for name, equation in INIT_OF.items()])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_fresh_block_module_parameters_hold_the_spec_init(subject, device, dtype, name):
    """The factory's module, as built: `name` equals its spec init everywhere, exactly."""
    gain = {"learned_gain": True} if name in NEEDS_GAIN else {}
    subs = _affine_sublayers(dtype, device)
    module = subject.get(MECH)(subs, 4, int(fixture(FX)["inputs"]["num_blocks"]), dtype=dtype, device=device, **gain)
    params = dict(module.named_parameters())
    if name not in params:
        raise NotRun(f"the module has no parameter {name!r}" + (" with learned_gain=True" if gain else ""))
    p = params[name].detach()
    want = torch.full_like(p, float(spec_value(INIT_OF[name])))
    assert_close(p, want, EXACT, what=f"{name} of a freshly built module against {INIT_OF[name]} "
                                      f"(value {spec_value(INIT_OF[name])}), exactly")


@pytest.mark.gate(equations=["attnres.rmsnorm_gain", "attnres.eq2"], mechanism=MECH, gate_class="init_through_module")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_fresh_learned_gains_leave_the_output_at_the_oracle_with_unit_gains(subject, device, dtype):
    """learned_gain=True, gains as built; eps and convention as the fixture states them; queries written:
    h_1 .. h_L and h_out equal the oracle's with g = 1 (fixture attnres.module_defaults)."""
    subs = [_Recorder(f) for f in _affine_sublayers(dtype, device)]
    eps = float(param(FX, "eps")["float64"])
    module = subject.get(MECH)(subs, 4, int(fixture(FX)["inputs"]["num_blocks"]), convention=param(FX, "convention"),
                               eps=eps, learned_gain=True, dtype=dtype, device=device)
    params = dict(module.named_parameters())
    for name in ("queries", "output_query"):
        if name not in params:
            raise NotRun(f"the module has no parameter {name!r} (the interface's pseudo-queries)")
        with torch.no_grad():
            params[name].copy_(value(FX, name, dtype, device))
    out = module(value(FX, "h1", dtype, device))
    if any(not s.inputs for s in subs):
        raise RuntimeError("a sublayer was never called: the subject skipped it")
    got = torch.stack([s.inputs[-1] for s in subs] + [out.detach()])
    want = expected(FX, "h_and_out", dtype, device)
    assert_close(got, want, dataclasses.replace(FORWARD_TOL, floor=float(want.abs().max())),
                 what="h_1 .. h_L and h_out with the gains as the factory made them (last = output)")
