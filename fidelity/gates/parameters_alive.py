"""Every parameter alive: moving one parameter moves the output by at least half what the oracle says it should.

A parameter the forward never reads (streams rebuilt from one hidden each call, a coefficient
overwritten, a weight read from a stale copy) leaves the output where it was. The fixture gives,
for each parameter, a seeded direction of stated size and the oracle's max |output change| along
it; the gate moves the subject's module the same way and reads the ratio of the two changes.

A change within rounding of the output is no change: a parameter scaled to nothing (1e-30 x its term) moves
the output by less than an ulp, and a ratio of two rounding-size changes says nothing. So the oracle's change
must stand above rounding of the output (ROUNDING_EPS x eps of max |output|, gradient_reach's floor and
reason), and at a ratio >= ALIVE_AT_LEAST the subject's change then stands above half that.
"""
from __future__ import annotations

import torch

from fidelity.gates.compare import assert_bound
from fidelity.gates.gradient_reach import negligible_fraction

ALIVE_AT_LEAST = 0.5
"""The smallest accepted ratio subject change / oracle change: a dead parameter reads 0, a live one about 1."""


def rounding_of(output: torch.Tensor) -> float:
    """The size below which a change of `output` cannot be told from rounding in its dtype."""
    return negligible_fraction(output.dtype) * float(output.detach().double().abs().max())


def assert_moves_output(before: torch.Tensor, after: torch.Tensor, oracle_change: float, *, what: str) -> float:
    """max |after - before| / oracle_change >= ALIVE_AT_LEAST; the reading `change_ratio` is that ratio.

    `before` and `after` are the subject's outputs on the same input before and after the gate moved one
    parameter by the fixture's step; `oracle_change` is the oracle's max |output change| for that step
    (the fixture's). ValueError (red for another reason) when the oracle's change is not above rounding.

    >>> import torch
    >>> from fidelity.gates.parameters_alive import assert_moves_output
    >>> linear = torch.nn.Linear(2, 2, dtype=torch.float64)
    >>> x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    >>> before = linear(x).detach()
    >>> with torch.no_grad():
    ...     linear.bias += 0.1  # the step; the oracle says every output moves by 0.1
    >>> round(assert_moves_output(before, linear(x).detach(), 0.1, what="bias"), 6)
    1.0
    >>> assert_moves_output(before, before.clone(), 0.1, what="a bias the forward never reads")
    Traceback (most recent call last):
    ...
    fidelity.gates.compare.GateFailure: a bias the forward never reads: output change 0 against the oracle's 0.1: reading 0 is not >= 0.5. reading=0
    """
    if not oracle_change > 0:
        raise ValueError(f"{what}: the oracle's change must be positive to bound a parameter's effect, "
                         f"got {oracle_change!r}")
    if not oracle_change > rounding_of(before):
        raise ValueError(f"{what}: the oracle's change {oracle_change:.6g} is within rounding of the output "
                         f"({rounding_of(before):.3g} in {before.dtype}); a ratio of rounding says nothing: move the "
                         "parameter by a larger step in the fixture")
    change = float((after.detach().double() - before.detach().double()).abs().max())
    return assert_bound(change / oracle_change, at_least=ALIVE_AT_LEAST, reading_name="change_ratio",
                        what=f"{what}: output change {change:.6g} against the oracle's {oracle_change:.6g}")
