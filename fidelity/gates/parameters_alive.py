"""Every parameter alive: moving one parameter moves the output by at least half what the oracle says it should.

A parameter the forward never reads (streams rebuilt from one hidden each call, a coefficient
overwritten, a weight read from a stale copy) leaves the output where it was. The fixture gives,
for each parameter, a seeded direction of stated size and the oracle's max |output change| along
it; the gate moves the subject's module the same way and reads the ratio of the two changes.
"""
from __future__ import annotations

import torch

from fidelity.gates.compare import assert_bound

ALIVE_AT_LEAST = 0.5
"""The smallest accepted ratio subject change / oracle change: a dead parameter reads 0, a live one about 1."""


def assert_moves_output(before: torch.Tensor, after: torch.Tensor, oracle_change: float, *, what: str) -> float:
    """max |after - before| / oracle_change >= ALIVE_AT_LEAST; the reading `change_ratio` is that ratio."""
    if not oracle_change > 0:
        raise ValueError(f"{what}: the oracle's change must be positive to bound a parameter's effect, "
                         f"got {oracle_change!r}")
    change = float((after.detach().double() - before.detach().double()).abs().max())
    return assert_bound(change / oracle_change, at_least=ALIVE_AT_LEAST, reading_name="change_ratio",
                        what=f"{what}: output change {change:.6g} against the oracle's {oracle_change:.6g}")
