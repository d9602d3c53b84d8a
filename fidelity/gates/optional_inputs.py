"""Optional inputs a subject declares it lacks (Capability(lacks=("gain",))), as the gates honour them.

A package whose key norm has no learned gain cannot take a gain; refusing every gate that passes one
(NotRun) cost it the gates to which the gain is incidental (one softmax per position, statelessness,
the output's dtype). So a gate says which kind it is: where the input is incidental it passes
`optional_input(...)`, which is the value, or None (the interface's own "not given") for a subject that
lacks it; a gate that holds the input itself calls `require_input(...)`, and its instance is not run
on such a subject, with the reason. This file is the one home of that rule and of the reason given.
"""
from __future__ import annotations

from typing import TypeVar

import pytest

T = TypeVar("T")


def lacks(subject, mechanism: str, name: str) -> bool:
    """Whether `subject` declares it lacks the optional input `name` of `mechanism`."""
    return name in getattr(subject.capabilities.get(mechanism), "lacks", ())


def optional_input(subject, mechanism: str, name: str, value: T) -> T | None:
    """`value` for the input `name`, or None where the subject lacks it (the input is incidental to the gate)."""
    return None if lacks(subject, mechanism, name) else value


def require_input(subject, mechanism: str, name: str) -> None:
    """In a gate that holds the input `name`: skip the instance, with the reason, where the subject lacks it."""
    if lacks(subject, mechanism, name):
        pytest.skip(f"subject {subject.name} has no {name!r} for {mechanism} (Capability lacks={(name,)}): "
                    f"this gate holds the {name}")
