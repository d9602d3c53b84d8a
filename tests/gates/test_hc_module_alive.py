"""Gate (parameters_alive): moving each parameter block of the hyper-connection module moves its output
by at least half what the oracle says.

Fixtures hc.module_dynamic (DHC) and hc.module_static (static HC): every parameter written to seeded
non-trivial values (Eq. 14's init plus offsets; s_alpha = 1/4, s_beta = 3/8), body T(h) = h W_T, and for
each block a seeded direction of size 1/16 (entries in {-1, -1/2, 1/2, 1}) with the oracle's
max |out change| along it. A block is a parameter, or a column block of one: static_alpha's A_m
(column 0) and A_r (columns 1..n), dynamic_alpha_fn's W_m and W_r; a whole-parameter move would let
a dead A_r hide behind a live A_m. One block, one instance: a subject without a parameter (the
package adapter has no LayerNorm) is refused for that block only.
"""
from fractions import Fraction

import pytest
import torch

from fidelity.gates.fixture_values import fixture
from fidelity.gates.parameters_alive import assert_moves_output
from fidelity.gates.module_parameters import parameter
from hc_module_point import MECH, module_at_fixture

CASES = {"hc.module_dynamic": True, "hc.module_static": False}


def _blocks(fixture_id: str) -> list[str]:
    return list(fixture(fixture_id)["params"]["blocks"])


INSTANCES = [pytest.param(fx, block, id=f"{'dynamic' if dyn else 'static'}-{block}")
             for fx, dyn in CASES.items() for block in _blocks(fx)]


@pytest.mark.gate(equations=["hc.eq1", "hc.eq3", "hc.eq4", "hc.eq5", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12",
                             "hc.eq13", "hc.alg2"],
                  mechanism=MECH, gate_class="parameters_alive")
@pytest.mark.parametrize("fixture_id, block", INSTANCES)
def test_moving_each_parameter_block_moves_the_output_as_the_oracle_says(subject, device, fixture_id, block):
    fx = fixture(fixture_id)
    dynamic = CASES[fixture_id]
    dtype = torch.float64
    module, H, body = module_at_fixture(subject, fixture_id, dynamic, dtype, device)
    target = parameter(module, fx["params"]["blocks"][block]["parameter"], MECH)
    with torch.no_grad():
        before = module(H, body).clone()
        step = float(Fraction(fx["params"]["direction_size"]))
        direction = torch.tensor(fx["inputs"]["directions"][block], dtype=torch.float64)
        target.add_(step * direction.to(dtype=dtype, device=device).reshape(target.shape))
        after = module(H, body)
    oracle_change = float(fx["expected"]["change"][block]["float64"])
    assert_moves_output(before, after, oracle_change, what=f"{block} moved by {fx['params']['direction_size']} "
                                                           f"times its direction ({'DHC' if dynamic else 'static HC'})")
