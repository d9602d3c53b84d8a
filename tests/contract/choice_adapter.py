"""Depth attentions that differ from our reference only in a default, written from the README as a package
author would: the reference's depth attention with another default.

OTHER_EPS defaults to eps = 2**-23 (a package's choice; the paper states no epsilon, and ours, 1e-6, is tier
c: attnres.eps). OTHER_CONVENTION defaults to the "l2" score convention, which is not the paper's score
(attnres.eq2): a departure from the paper, whatever our choices.
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, Subject

PACKAGE_EPS = 2.0 ** -23
CAPABILITY = Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",))


def _with_defaults(default_eps: float, default_convention: str):
    def depth_attention(sources: torch.Tensor, query: torch.Tensor, *, convention: str = default_convention,
                        eps: float = default_eps, gain: torch.Tensor | None = None, backward: str = "autograd"):
        from fidelity.impl.torch import depth_attend

        return depth_attend(sources, query, convention=convention, eps=eps, gain=gain, backward=backward)
    return depth_attention


def _subject(name: str, fn) -> Subject:
    return Subject(name=name, description="the reference's depth attention with another default",
                   mechanisms={"depth_attention": fn}, capabilities={"depth_attention": CAPABILITY},
                   unavailable_reason=lambda: None)


OTHER_EPS = _subject("other-eps", _with_defaults(PACKAGE_EPS, "paper"))
OTHER_CONVENTION = _subject("other-convention", _with_defaults(1e-6, "l2"))
