"""A depth attention whose key norm has no learned gain (as the attn-res package ships it), written from the
README: the interface's `gain` stays in the signature, refused unless None, and the capability says
Capability(lacks=("gain",)), so gates to which the gain is incidental call without it and gates that
hold the gain are not run, each saying why.

SUBJECT is the reference's depth attention at unit gain. DOUBLED_CHANNEL scales the last channel of
every key by 2 (a gain of ones that is not ones): the unit-gain gates must see it. MISSPELLED declares
lacks=("gian",): loading it is a one-line error naming the subject and the interface's optional inputs.
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, NotRun, Subject

GAINLESS = Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",), lacks=("gain",))


def _gainless(doubled_channel: bool):
    def depth_attention(sources: torch.Tensor, query: torch.Tensor, *, convention: str = "paper",
                        eps: float = 1e-6, gain: torch.Tensor | None = None, backward: str = "autograd"):
        from fidelity.impl.torch import depth_attend

        if gain is not None:
            raise NotRun("this key norm has no learned gain; gain must be None")
        fixed = None
        if doubled_channel:
            fixed = torch.ones(sources.shape[-1], dtype=sources.dtype, device=sources.device)
            fixed[-1] = 2.0
        return depth_attend(sources, query, convention=convention, eps=eps, gain=fixed, backward=backward)
    return depth_attention


def _subject(name: str, fn, capability: Capability = GAINLESS) -> Subject:
    return Subject(name=name, description="the reference's depth attention with no learned gain",
                   mechanisms={"depth_attention": fn}, capabilities={"depth_attention": capability},
                   unavailable_reason=lambda: None)


SUBJECT = _subject("gainless", _gainless(doubled_channel=False))
DOUBLED_CHANNEL = _subject("gainless-doubled", _gainless(doubled_channel=True))
MISSPELLED = _subject("gainless-typo", _gainless(doubled_channel=False),
                      Capability(dtypes=("float32",), devices=("cpu",), backward=("autograd",), lacks=("gian",)))
