"""The shape a hidden-in, hidden-out stack declares (Capability(streams=, readout=, infers=)), as gates honour it.

Through a stack that takes a hidden and returns one, an identity of the streams shows only for a known layout:
with the papers' replicated streams (each starts as the hidden, the readout sums them) a column-stochastic
H_res keeps the summed hidden; with sliced streams the same H_res mixes slices of the hidden, and what it keeps
is their sum. A gate that holds such an identity calls `require_layout(...)`, and its instance
is not run, with the reason, on a subject that declares another layout or none.

A gate that holds what Eq. 3 makes of streams that all start as the hidden calls `require_copies_of_the_hidden`:
it runs for replicated streams and for a stack with no streams (streams="none", held as one stream, n = 1: H_res is
then the 1 x 1 doubly stochastic matrix 1), and `copies_read_out` says what the readout makes of n copies of the
hidden: n for the papers' sum (n unknown to the gates, a whole number >= 1), 1 for a mean (readout="mean") or for
one stream. A gate that asks a stack to refuse a width calls `require_width_taken`: a factory whose package reads
its width off the hidden (infers=("d",)) is not asked, saying why. This file is the one home of these rules and
of the reasons given.
"""
from __future__ import annotations

import pytest

COPIES_OF_THE_HIDDEN = ("replicated", "none")
"""Layouts whose streams all start as the hidden: the papers' replicated streams, and no streams (one stream)."""


def declared_layout(subject, mechanism: str) -> str:
    """The stream layout `subject` declares for `mechanism`, or "" where it says none."""
    return getattr(subject.capabilities.get(mechanism), "streams", "")


def declared_readout(subject, mechanism: str) -> str:
    """How `subject` reads its replicated streams back for `mechanism`: "sum" (the papers', the default) or "mean"."""
    return getattr(subject.capabilities.get(mechanism), "readout", "sum")


def require_layout(subject, mechanism: str, layout: str) -> None:
    """In a gate that holds an identity of `layout`: skip the instance, with the reason, where it is not declared."""
    declared = declared_layout(subject, mechanism)
    if declared != layout:
        pytest.skip(f"subject {subject.name} {_said(declared)} for {mechanism}: this gate holds an identity of "
                    f"{layout} streams (Capability(streams={layout!r}))")


def require_copies_of_the_hidden(subject, mechanism: str) -> str:
    """In a gate that holds an identity of streams that all start as the hidden: skip the instance, with the reason,
    unless the subject declares replicated streams or none; else return how the gate holds it, for its messages."""
    declared = declared_layout(subject, mechanism)
    if declared not in COPIES_OF_THE_HIDDEN:
        pytest.skip(f"subject {subject.name} {_said(declared)} for {mechanism}: this gate holds an identity of "
                    "streams that all start as the hidden (Capability(streams='replicated'), or streams='none' "
                    "for a stack without streams)")
    if declared == "none":
        return "no streams (streams='none'), held as one stream: n = 1, the readout the stream itself"
    readout = declared_readout(subject, mechanism)
    return f"replicated streams, read out as their {readout} (Capability(streams='replicated', readout={readout!r}))"


def copies_read_out(subject, mechanism: str) -> int | None:
    """What the readout makes of n copies of the hidden, in copies: 1 for a mean readout or for no streams; None
    for the papers' sum, which returns n copies, n being the package's (a whole number >= 1 the gates do not know)."""
    if declared_layout(subject, mechanism) == "none" or declared_readout(subject, mechanism) == "mean":
        return 1
    return None


def require_width_taken(subject, mechanism: str) -> None:
    """In a gate that asks the factory to refuse a width: skip the instance, with the reason, where the subject
    declares that its package reads the width off the hidden (Capability(infers=("d",)))."""
    if "d" in getattr(subject.capabilities.get(mechanism), "infers", ()):
        pytest.skip(f"subject {subject.name} declares Capability(infers=('d',)) for {mechanism}: its package takes "
                    "no width (it reads it off the hidden), so it is not asked to refuse width 0, a width it never "
                    "receives")


def _said(declared: str) -> str:
    return f"declares streams={declared!r}" if declared else "declares no stream layout"
