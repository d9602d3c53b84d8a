"""An adapter for shapedstacks (tests/contract/shapedstacks: stacks in the shapes real packages have), written from
its docstring alone: the mhc_stack mechanism, hidden in and hidden out, around the gates' own bodies.

DENSE wraps DenseStack, a softmax over earlier layers' outputs that calls itself mHC; it declares what its README
claims, the papers' replicated streams. MEAN wraps MeanMHCStack and declares its mean readout
(Capability(readout="mean")). WIDTHLESS wraps WidthlessMHCStack, whose constructor takes no width: the factory is
handed the gates' d and drops it, and says so (Capability(infers=("d",))).
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, Subject


def _package():
    import shapedstacks  # lazily: loading this file never fails

    return shapedstacks


def dense(d, bodies, *, dtype=torch.float32, device=None):
    return _package().DenseStack(d, list(bodies)).to(dtype=dtype, device=device)


def mean(d, bodies, *, dtype=torch.float32, device=None):
    return _package().MeanMHCStack(d, list(bodies), streams=4).to(dtype=dtype, device=device)


def widthless(d, bodies, *, dtype=torch.float32, device=None):
    # the package takes its width from the hidden: d is not passed on, so it cannot refuse d = 0
    return _package().WidthlessMHCStack(list(bodies), streams=4).to(dtype=dtype, device=device)


def _unavailable() -> str | None:
    try:
        _package()
    except ImportError as exc:
        return f"shapedstacks does not import: {exc}"
    return None


def _subject(name: str, factory, **words) -> Subject:
    return Subject(
        name=name,
        description=f"shapedstacks behind the mhc_stack interface ({factory.__name__})",
        mechanisms={"mhc_stack": factory},
        capabilities={"mhc_stack": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",),
                                              **words)},
        unavailable_reason=_unavailable,
        modules={"mhc_stack": ("shapedstacks",)},
    )


DENSE = _subject("shapedstacks-dense", dense, streams="replicated")
MEAN = _subject("shapedstacks-mean", mean, streams="replicated", readout="mean")
WIDTHLESS = _subject("shapedstacks-widthless", widthless, streams="replicated", infers=("d",))
