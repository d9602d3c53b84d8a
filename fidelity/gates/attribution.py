"""Which equations a failing assertion checks, in a gate that holds several.

A gate's marker lists every equation it holds, and a finding is listed under each of them: right when one
comparison checks them all, wrong when the gate checks them in separate assertions (a body's input at init
and the stack's readout are different equations, and a defect in one is no finding about the other).
Wrap each such part in `checking(...)`:

    with checking("hc.eq14", "hc.setup"):
        assert_close(inputs, plain_inputs, ...)

An assertion that fails inside the block is attributed to those equations alone (the `checks` of the
failed instance: `check --subject`'s verdicts, the ledger's findings). The innermost block names it.
Equations the gate's marker does not hold are not an attribution: such a failure stays under every
equation of the gate (the plugin's rule, so no finding is lost to a misspelled name).
"""
from __future__ import annotations

import contextlib
from typing import Iterator

ATTRIBUTE = "fidelity_checks"  # set on the AssertionError that leaves a checking() block


@contextlib.contextmanager
def checking(*equations: str) -> Iterator[None]:
    """Attribute an assertion failing inside the block to `equations` (spec equation ids the gate's marker
    lists); an error that is not an AssertionError passes through unattributed (red for another reason).

    >>> from fidelity.gates.attribution import checked_by, checking
    >>> from fidelity.gates.compare import assert_bound
    >>> gate_equations = ["demo.eq1", "demo.eq2"]  # what the gate's marker holds
    >>> try:
    ...     with checking("demo.eq2"):
    ...         assert_bound(3, at_most=0, what="differences in the readout")
    ... except AssertionError as failure:
    ...     print(checked_by(failure, gate_equations))
    ['demo.eq2']
    """
    if not equations:
        raise ValueError("checking() names at least one equation")
    try:
        yield
    except AssertionError as exc:
        if not getattr(exc, ATTRIBUTE, None):
            setattr(exc, ATTRIBUTE, tuple(equations))
        raise


def checked_by(exc: BaseException, gate_equations: list[str]) -> list[str]:
    """The equations `exc` is attributed to by a checking() block, when the gate holds every one; else []."""
    named = sorted(set(getattr(exc, ATTRIBUTE, None) or ()))
    return named if named and set(named) <= set(gate_equations) else []
