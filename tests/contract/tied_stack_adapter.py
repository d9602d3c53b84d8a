"""An adapter for tiedmhc (tests/contract/tiedmhc: mHC with the streams inside one module), written as a user
writes one: the mhc_stack mechanism, hidden in and hidden out, around the gates' own bodies.

SUBJECT wraps tiedmhc.MHCStack at the package's own 4 streams; TIED wraps MHCStackTied (one connection run at
every layer); TWO_STREAMS wraps MHCStack built with streams=2. Each declares the package's stream layout
(streams="replicated": the hidden copied into the streams, summed at the end).
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, Subject


def _factory(class_name: str, streams: int):
    def factory(d, bodies, *, dtype=torch.float32, device=None):
        import tiedmhc  # lazily: loading this file never fails

        return getattr(tiedmhc, class_name)(d, list(bodies), streams=streams).to(dtype=dtype, device=device)
    factory.__name__ = class_name
    return factory


def _unavailable() -> str | None:
    try:
        import tiedmhc  # noqa: F401
    except ImportError as exc:
        return f"tiedmhc does not import: {exc}"
    return None


def _subject(name: str, class_name: str, streams: int) -> Subject:
    return Subject(
        name=name,
        description=f"tiedmhc.{class_name}(streams={streams}) behind the mhc_stack interface",
        mechanisms={"mhc_stack": _factory(class_name, streams)},
        capabilities={"mhc_stack": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",),
                                              streams="replicated")},
        unavailable_reason=_unavailable,
        modules={"mhc_stack": ("tiedmhc",)},
    )


SUBJECT = _subject("tiedmhc", "MHCStack", 4)
TIED = _subject("tiedmhc-tied", "MHCStackTied", 4)
TWO_STREAMS = _subject("tiedmhc-two-streams", "MHCStack", 2)
