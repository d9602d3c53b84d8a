"""Optional inputs a subject declares it lacks (Capability(lacks=("gain",))), as the gates honour them.

A package whose key norm has no learned gain cannot take a gain; refusing every gate that passes one
(NotRun) cost it the gates to which the gain is incidental (one softmax per position, statelessness,
the output's dtype). So a gate says which kind it is: where the input is incidental it passes
`optional_input(...)`, which is the value, or None (the interface's own "not given") for a subject that
lacks it; an instance that holds the input itself calls `require_input(...)` and is not run on such a
subject, with the reason. A gate whose check stands without the input but which also holds it (the
gradients of sources and query, and of the gain) is parametrised by INPUT_CASES and calls
`given_input(...)`: its "without" instances run on every subject, its "with" instances hold the input.
No gate hands a lacked input to a subject: the harness says what a subject lacks, once, never the
adapter's NotRun. This file is the one home of that rule and of the reason given; which names may be
lacked at all (tensor inputs whose default is None) is fidelity.mechanisms.registry.optional_inputs.
"""
from __future__ import annotations

from typing import TypeVar

import pytest

T = TypeVar("T")

INPUT_CASES = ("with", "without")
"""The two instances of a gate split by an optional input: the input given, and left out (None)."""


def lacks(subject, mechanism: str, name: str) -> bool:
    """Whether `subject` declares it lacks the optional input `name` of `mechanism`."""
    return name in getattr(subject.capabilities.get(mechanism), "lacks", ())


def optional_input(subject, mechanism: str, name: str, value: T) -> T | None:
    """`value` for the input `name`, or None where the subject lacks it (the input is incidental to the gate)."""
    return None if lacks(subject, mechanism, name) else value


def require_input(subject, mechanism: str, name: str) -> None:
    """In an instance that holds the input `name`: skip it, with the reason, where the subject lacks it."""
    if lacks(subject, mechanism, name):
        pytest.skip(f"subject {subject.name} has no {name!r} for {mechanism} (Capability lacks={(name,)}): "
                    f"this instance holds the {name}")


def given_input(subject, mechanism: str, name: str, value: T, case: str) -> T | None:
    """For an instance of INPUT_CASES: `value` in the "with" instance (which holds the input: not run where
    the subject lacks it), None in the "without" instance (run on every subject)."""
    if case not in INPUT_CASES:
        raise ValueError(f"input case {case!r}: expected one of {INPUT_CASES}")
    if case == "without":
        return None
    require_input(subject, mechanism, name)
    return value
