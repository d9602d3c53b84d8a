"""Refusals as documented: a call the interface says must raise a named error raises exactly that error.

A guard removed lets a bad argument through (an empty module built, a wrong shape broadcast, an
unknown option silently run as another); a guard weakened raises the wrong error from deep inside
torch. `assert_behaves_as_documented` runs one case and names what happened instead. A NotRun
from the subject is passed on (not run, never passed).
"""
from __future__ import annotations

from typing import Callable

from fidelity.gates.compare import assert_bound
from fidelity.mechanisms.refusal import NotRun

RETURNED = "returned"


def outcome_of(run: Callable[[], object]) -> str:
    """"returned", or the name of the exception `run()` raised (NotRun propagates)."""
    try:
        run()
    except NotRun:
        raise
    except Exception as exc:  # noqa: BLE001 - any error is an outcome, named in the gate's message
        return type(exc).__name__
    return RETURNED


def assert_behaves_as_documented(run: Callable[[], object], error: type[BaseException] | None, *, case: str) -> float:
    """run() raises exactly `error` (or returns, when error is None); the reading `as_documented` is 1 or 0.

    `run` makes the one call the case is about (a closure over the subject and its arguments); `case` names
    it in the message. A subclass of `error` is not `error`: the interface names the exact type.

    >>> import torch
    >>> from fidelity.gates.refusals import assert_behaves_as_documented
    >>> def softmax(z, temperature=1.0):  # a subject that guards as its interface says
    ...     if temperature <= 0:
    ...         raise ValueError("the temperature must be positive")
    ...     return (z / temperature).softmax(-1)
    >>> z = torch.tensor([1.0, 2.0])
    >>> assert_behaves_as_documented(lambda: softmax(z, temperature=0.0), ValueError, case="T = 0")
    1.0
    >>> assert_behaves_as_documented(lambda: (z / 0.0).softmax(-1), ValueError, case="T = 0")  # no guard
    Traceback (most recent call last):
    ...
    fidelity.gates.compare.GateFailure: T = 0: the interface says ValueError, the subject returned: reading 0 is not >= 1. reading=0
    """
    happened = outcome_of(run)
    want = RETURNED if error is None else error.__name__
    return assert_bound(1 if happened == want else 0, at_least=1, reading_name="as_documented",
                        what=f"{case}: the interface says {want}, the subject {happened}")
