"""The stream layout a hidden-in, hidden-out stack declares (Capability(streams="replicated")), as gates honour it.

Through a stack that takes a hidden and returns one, an identity of the streams shows only for a known layout:
with the papers' replicated streams (each starts as the hidden, the readout sums them) a column-stochastic
H_res keeps the summed hidden; with sliced streams the same H_res mixes slices of the hidden, and what it keeps
is their sum. A gate that holds such an identity calls `require_layout(...)`, and its instance
is not run, with the reason, on a subject that declares another layout or none. This file is the one home of
that rule and of the reason given.
"""
from __future__ import annotations

import pytest


def declared_layout(subject, mechanism: str) -> str:
    """The stream layout `subject` declares for `mechanism`, or "" where it says none."""
    return getattr(subject.capabilities.get(mechanism), "streams", "")


def require_layout(subject, mechanism: str, layout: str) -> None:
    """In a gate that holds an identity of `layout`: skip the instance, with the reason, where it is not declared."""
    declared = declared_layout(subject, mechanism)
    if declared != layout:
        said = f"declares streams={declared!r}" if declared else "declares no stream layout"
        pytest.skip(f"subject {subject.name} {said} for {mechanism}: this gate holds an identity of "
                    f"{layout} streams (Capability(streams={layout!r}))")
