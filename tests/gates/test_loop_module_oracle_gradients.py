"""Gate (gradients_from_oracle): the loop model's backward gives the ORACLE's derivative, parameter by parameter.

tests/gates/test_loop_module_gradients.py holds the model's backward to central differences of the model's own
forward (float64 only): when the forward is wrong too (a custom backward written for a wrong forward, a detach
paired with a forward change) both sides move together and it stays green. Here the expected Jacobian comes from
the oracle, independent of the subject (issue 14): fixture loop_model.module_jacobian, central differences of
fidelity.oracles.loop_model.loop_logits at 60 digits (~38 good digits, stored at 40), per arm graph (rezero,
attnres, mHC sliced and paper, HC dynamic and static) at a tiny config (vocab 3, d 2, T 2, hidden_mult 1,
2 streams; every other field the spec's default), one token, the fixture's seeded dyadic parameters (exact in
float32 and float64; not the init, where phi = 0, W = 0 and queries = 0 make gradients legitimately zero).

The parameters are those wired in the graph, less the few the fixture leaves out where another graph holds the
same code (JACOBIAN_LEFT_OUT: the body and the readout outside rezero and hc_static; paper mHC's H_res, whose
effect at T = 2 is a cancellation no eps-sized bound holds). One instance per (graph, parameter, dtype):
J[r, *p.shape] = d logits_r / d p by the module's backward (every iteration's logits, flattened), element by
element against the oracle's, relative to max|J| of that parameter.
"""

import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import fixture
from fidelity.gates.jacobians import jacobian_of_tensor
from fidelity.gates.module_parameters import write_parameters
from fidelity.mechanisms.loop_model import config_class

FIXTURE = "loop_model.module_jacobian"
CASES = [(graph, key.removeprefix("d_logits_d_")) for graph, group in fixture(FIXTURE)["expected"].items()
         for key in group]
"""(graph, parameter): one instance per Jacobian the fixture holds."""
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
EQUATIONS = ["attnres.placement_loop", "attnres.eq2", "attnres.eq3", "mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9",
             "mhc.layout.sliced", "mhc.layout.replicated", "hc.eq5", "hc.eq11", "hc.eq12", "hc.eq13"]
# Relative to max|J| of the parameter: two iterations of the body, the arm (20 Sinkhorn steps in mHC, a LayerNorm
# over d = 2 and tanh in DHC) and the readout, each rounding terms of about max|J| (measured on the torch subject,
# worst over every case: 6.9 eps in float32, 8.4 eps in float64, both hc_dynamic's alpha_scale; the other graphs
# <= 4.6 eps). 128 eps leaves 15x room. A detached path zeroes whole rows of J and a wrong factor moves them by a
# fair share of max|J|: the state detached between iterations reads >= 6.5e5 eps of float32 in every graph
# (3.5e14 of float64), P220..P222 (a .data read, a doubled branch gradient, a detached h_0) 1.0 to 1.08 x max|J|.
ORACLE_EPS_MULTIPLE = 128


def _tensor(raw, dtype, device):
    """A fixture value (exact JSON numbers, or {"exact", "float64"}) as a tensor of `dtype` (exact: dyadic)."""
    return torch.tensor(raw["float64"] if isinstance(raw, dict) else raw, dtype=torch.float64).to(dtype=dtype,
                                                                                                  device=device)


def _model(subject, graph, dtype, device):
    """The factory's model at the fixture's config for `graph`, every parameter set to the fixture's by name."""
    fx = fixture(FIXTURE)
    case = fx["inputs"][graph]
    cfg = {k: (float(v["float64"]) if isinstance(v, dict) else v) for k, v in case["config"].items()}
    factory = subject.get("loop_model")
    config_type = config_class(factory)
    model = factory(config_type(**cfg), torch.Generator().manual_seed(0), dtype=dtype, device=device)
    values = {k: _tensor(v, dtype, device) for k, v in case["params"].items()}
    return model, write_parameters(model, values, "loop_model")  # NotRun names a parameter the model lacks


@pytest.mark.gate(equations=EQUATIONS, mechanism="loop_model", gate_class="gradients_from_oracle")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("graph,name", CASES, ids=[f"{g}-{n}" for g, n in CASES])
def test_loop_module_jacobian_equals_the_oracles(subject, device, graph, name, dtype):
    """d (every iteration's logits) / d `name` by the module's backward against the oracle's 40-digit Jacobian,
    element by element, relative to its max|J|. Reading: the worst relative error."""
    model, params = _model(subject, graph, dtype, device)
    toks = torch.tensor(fixture(FIXTURE)["inputs"]["tokens"], dtype=torch.int64, device=device)
    got = jacobian_of_tensor(lambda: tuple(model(toks)), params[name])
    want = _tensor(fixture(FIXTURE)["expected"][graph][f"d_logits_d_{name}"], torch.float64, device)
    scale = float(want.abs().max())
    assert_close(got, want, Tolerance(eps_multiple=ORACLE_EPS_MULTIPLE, floor=scale), dtype=dtype,
                 what=f"d logits / d {name} against the oracle ({graph} graph of the loop model), relative to "
                      f"max|J| = {scale:.3g}")
