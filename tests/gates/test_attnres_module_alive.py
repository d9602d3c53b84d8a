"""Gates (every parameter alive): moving each Block AttnRes parameter moves h_out as the oracle says.

Issue 14: a module whose parameter has no effect (the output aggregated with another query, a
gain never read) passed every gate, because nothing checked that each parameter changes the
output. Fixture attnres.module_alive: the module case of attnres.module_defaults (L = 5 affine
sublayers, N = 2, d = 4, two positions) with a learned gain and every parameter at a non-zero
base; for each instance (one sublayer's row of queries or of gains, output_query, output_gain) a
seeded direction whose entries are +-1/4, and the oracle's max |h_out(base + direction) - h_out(base)|.
The gate moves the subject's module the same way and reads the ratio of its change to the
oracle's (fidelity.gates.parameters_alive: >= 0.5 passes; a dead parameter reads 0).

Layer 1's rows (queries[0], gains[0]) are no instance: layer 1 attends b_0 alone and a one-source
softmax is 1, so the oracle's change is exactly 0 (the builder checks it): not a defect, Eq. 6.
"""
from __future__ import annotations

import pytest
import torch

from fidelity.gates.fixture_values import fixture, param, value
from fidelity.gates.parameters_alive import assert_moves_output
from fidelity.subjects.subject import NotRun

MECH = "block_attnres"
FX = "attnres.module_alive"
MODES = ["direct", "two_phase"]
INSTANCES = list(fixture(FX)["expected"]["change"])
"""One instance per parameter (and per sublayer row of queries and gains), as the fixture lists them."""


def _split(instance: str) -> tuple[str, int | None]:
    if "[" in instance:
        name, row = instance.rstrip("]").split("[")
        return name, int(row)
    return instance, None


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq5", "attnres.eq6", "attnres.rmsnorm_gain"], mechanism=MECH,
                  gate_class="parameters_alive")
@pytest.mark.parametrize("instance", INSTANCES)
@pytest.mark.parametrize("mode", MODES)
def test_moving_each_parameter_moves_the_output_as_the_oracle_says(subject, device, mode, instance):
    dtype = torch.float32
    W, c = value(FX, "W", dtype, device), value(FX, "c", dtype, device)
    subs = [lambda h, W=W[l], c=c[l]: h @ W.T + c for l in range(W.shape[0])]
    module = subject.get(MECH)(subs, W.shape[-1], int(fixture(FX)["inputs"]["num_blocks"]),
                               convention=param(FX, "convention"), eps=float(param(FX, "eps")["float64"]),
                               learned_gain=True, mode=mode, dtype=dtype, device=device)
    params = dict(module.named_parameters())
    for name in ("queries", "output_query", "gains", "output_gain"):
        if name not in params:
            raise NotRun(f"the module has no parameter {name!r} (learned_gain=True)")
        with torch.no_grad():
            params[name].copy_(value(FX, name, dtype, device))
    h1 = value(FX, "h1", dtype, device)
    with torch.no_grad():
        before = module(h1).clone()
        name, row = _split(instance)
        direction = torch.tensor(fixture(FX)["inputs"]["directions"][instance], dtype=dtype, device=device)
        (params[name] if row is None else params[name][row]).add_(direction)
        after = module(h1)
    oracle_change = float(fixture(FX)["expected"]["change"][instance]["float64"])
    assert_moves_output(before, after, oracle_change, what=f"h_out after moving {instance} by the fixture's direction "
                                                           f"({mode})")
