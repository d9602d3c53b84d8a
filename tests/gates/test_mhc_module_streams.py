"""Gate: expand and readout, the stream layouts' two maps, as the interface states them, with batch axes.

fidelity discover --module fidelity.impl.torch.mhc found both unheld: readout's sum replaced by a
mean, or expand's copies made along another axis, passed every gate (the residual's gates feed a
stream state directly). "paper": expand(h) is n copies of h [.., C] (x[.., i, :] = h for every i) and
readout(x) = sum_i x[.., i, :]; "sliced": expand(h) splits h [.., nC] into n slices of C and
readout concatenates them back. Values are small integers, so every result is exact in float32
(tolerance: 1 eps, relative; the maps are copies and sums of integers). h has batch axes [2, 3]
and C = n = 4, so an axis swapped is a different tensor, not an error.
"""
import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close

N = 4
EXACT = Tolerance(eps_multiple=1, floor=1.0)  # copies and sums of small integers: exact


def _h(shape, device):
    return torch.arange(1, 1 + int(torch.tensor(shape).prod()), dtype=torch.float32).reshape(shape).to(device) % 7 - 3


@pytest.mark.gate(equations=["mhc.layout.replicated", "mhc.layout.sliced"], mechanism="mhc_residual")
@pytest.mark.parametrize("direction", ["expand", "readout"])
@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_expand_and_readout_follow_the_layout(subject, device, layout, direction):
    """paper: expand = n copies, readout = sum over streams; sliced: expand = n slices, readout = concatenation."""
    C = 4
    module = subject.get("mhc_residual")(N, C, layout=layout, device=device)
    if direction == "expand":
        h = _h((2, 3, C) if layout == "paper" else (2, 3, N * C), device)
        want = h.unsqueeze(-2).expand(2, 3, N, C) if layout == "paper" else h.reshape(2, 3, N, C)
        assert_close(module.expand(h), want, EXACT, what=f"expand(h), {layout} layout")
    else:
        x = _h((2, 3, N, C), device)
        want = x.sum(dim=-2) if layout == "paper" else x.reshape(2, 3, N * C)
        assert_close(module.readout(x), want, EXACT, what=f"readout(x), {layout} layout")
