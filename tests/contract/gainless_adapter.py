"""A depth attention whose key norm has no learned gain (as the attn-res package ships it), written from the
README: the interface's `gain` stays in the signature, refused unless None, and the capability says
Capability(lacks=("gain",)), so gates to which the gain is incidental call without it and gates that
hold the gain are not run, each saying why.

SUBJECT is the reference's depth attention at unit gain. DOUBLED_CHANNEL scales the last channel of
every key by 2 (a gain of ones that is not ones): the unit-gain gates must see it. HALVED_SOURCE_GRADIENT
computes the right forward but hands back half the gradient of the sources (a custom autograd Function
between the caller and the reference): its backward must be a finding without a gain (issue 51).
MISSPELLED declares lacks=("gian",) and LACKS_AN_OPTION lacks=("learned_gain",) (a constructor flag of
block_attnres, an option, not an optional input): loading either is a one-line error naming the name,
the mechanism and the optional inputs it could lack.
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, NotRun, Subject

GAINLESS = Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",), lacks=("gain",))


class _HalfTheGradient(torch.autograd.Function):
    """The identity forward; its backward returns half the cotangent (a wrong gradient of the sources)."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return 0.5 * grad


def _gainless(doubled_channel: bool, halved_source_gradient: bool = False):
    def depth_attention(sources: torch.Tensor, query: torch.Tensor, *, convention: str = "paper",
                        eps: float = 1e-6, gain: torch.Tensor | None = None, backward: str = "autograd"):
        from fidelity.impl.torch import depth_attend

        if gain is not None:
            raise NotRun("this key norm has no learned gain; gain must be None")
        fixed = None
        if doubled_channel:
            fixed = torch.ones(sources.shape[-1], dtype=sources.dtype, device=sources.device)
            fixed[-1] = 2.0
        if halved_source_gradient:
            sources = _HalfTheGradient.apply(sources)
        return depth_attend(sources, query, convention=convention, eps=eps, gain=fixed, backward=backward)
    return depth_attention


def _subject(name: str, fn, capability: Capability = GAINLESS) -> Subject:
    return Subject(name=name, description="the reference's depth attention with no learned gain",
                   mechanisms={"depth_attention": fn}, capabilities={"depth_attention": capability},
                   unavailable_reason=lambda: None)


SUBJECT = _subject("gainless", _gainless(doubled_channel=False))
DOUBLED_CHANNEL = _subject("gainless-doubled", _gainless(doubled_channel=True))
HALVED_SOURCE_GRADIENT = _subject("gainless-halved-gradient", _gainless(doubled_channel=False,
                                                                     halved_source_gradient=True))
MISSPELLED = _subject("gainless-typo", _gainless(doubled_channel=False),
                      Capability(dtypes=("float32",), devices=("cpu",), backward=("autograd",), lacks=("gian",)))
LACKS_AN_OPTION = Subject(name="lacks-an-option", description="a Block AttnRes with no learned gain, said wrongly",
                          mechanisms={"block_attnres": lambda sublayers, d, num_blocks, **options: None},
                          capabilities={"block_attnres": Capability(dtypes=("float32",), devices=("cpu",),
                                                                    backward=("autograd",), lacks=("learned_gain",))},
                          unavailable_reason=lambda: None)
