"""Gate (gradients_from_oracle): the Block AttnRes module's backward is the oracle's derivative.

Issue 14: the other gradient gates compare the module's backward with central differences of the
module's own forward (test_attnres_module_gradients.py) or differentiate with respect to h1 alone
(test_attnres_block_gradients.py). A forward and backward that are wrong together, or a backward
whose error sits below what float64 differences resolve, passes both. Here the reference is
independent: fixture attnres.module_jacobian holds d h_out / d p for the input h1 and every parameter
(queries, output_query, gains, output_gain) by central differences of the mpmath oracle
(fidelity.oracles.block_attnres.stack_forward, ~38 good digits), at the module case of
attnres.module_alive: L = 5 affine sublayers, N = 2 blocks, d = 4, two positions, learned gains,
every parameter at a non-zero base (at zero queries a gain's gradient is legitimately zero).

The module is built by the subject's factory with the defaults as shipped (eps, convention: the
fixture is at the spec's defaults), its parameters written from the fixture by name, in both modes
and both backward routes, and its Jacobian taken by one backward per output element.
"""
from __future__ import annotations

import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import fixture, value
from fidelity.gates.jacobians import jacobian_of_tensor
from fidelity.subjects.subject import NotRun

MECH = "block_attnres"
FX = "attnres.module_jacobian"
MODES = ["direct", "two_phase"]
ROUTES = ["autograd", "manual"]
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
WRT = ["h1", "queries", "output_query", "gains", "output_gain"]
PARAMETERS = WRT[1:]
ORACLE_EPS_MULTIPLE = 32


def _module_and_tensors(subject, device, mode, backward, dtype):
    """The factory's module (learned gains, nothing else given) with the fixture's parameters, and {name: leaf}."""
    if not subject.supports(MECH, backward):
        pytest.skip(f"subject {subject.name} has no {backward!r} backward route for {MECH}")
    W, c = value(FX, "W", dtype, device), value(FX, "c", dtype, device)
    subs = [lambda h, W=W[l], c=c[l]: h @ W.T + c for l in range(W.shape[0])]
    module = subject.get(MECH)(subs, W.shape[-1], int(fixture(FX)["inputs"]["num_blocks"]), learned_gain=True,
                               mode=mode, backward=backward, dtype=dtype, device=device)
    params = dict(module.named_parameters())
    for name in PARAMETERS:
        if name not in params:
            raise NotRun(f"the module has no parameter {name!r} (learned_gain=True)")
        with torch.no_grad():
            params[name].copy_(value(FX, name, dtype, device))
    h1 = value(FX, "h1", dtype, device).requires_grad_(True)
    return module, {"h1": h1, **{name: params[name] for name in PARAMETERS}}


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq5", "attnres.eq6", "attnres.rmsnorm_gain"], mechanism=MECH,
                  gate_class="gradients_from_oracle")
@pytest.mark.parametrize("wrt", WRT)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
@pytest.mark.parametrize("mode", MODES)
def test_block_module_jacobian_equals_the_oracles(subject, device, mode, backward, dtype, wrt):
    """J[k, *p.shape] = d h_out_k / d p by the module's backward, against the oracle's, element by element,
    relative to max|J| (ORACLE_EPS_MULTIPLE eps of the dtype). Reading: the worst relative error."""
    module, tensors = _module_and_tensors(subject, device, mode, backward, dtype)
    h1 = tensors["h1"]
    got = jacobian_of_tensor(lambda: module(h1, mode=mode), tensors[wrt])
    want = torch.tensor(fixture(FX)["expected"][f"d_out_d_{wrt}"]["float64"], dtype=torch.float64, device=device)
    scale = float(want.abs().max())
    assert_close(got, want, Tolerance(eps_multiple=ORACLE_EPS_MULTIPLE, floor=scale), dtype=dtype,
                 what=f"d h_out / d {wrt} against the oracle ({mode}, {backward} backward), relative to "
                      f"max|J| = {scale:.3g}")
