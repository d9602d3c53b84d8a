"""An adapter for hiddenmhc (tests/contract/hiddenmhc: mHC with the streams inside one module), written
from the README alone: the mhc_stack mechanism, hidden in and hidden out, around the gates' own bodies.

SUBJECT wraps hiddenmhc.MHCStack; the other four wrap the package's shortcuts, each of which a gate
must label: DETACHED_SKIP (MHCStackFastMix), DEAD_PARAMETER (MHCStackStaticRes), NEVER_RESET
(MHCStackAnnealed), ROWS_ONLY (MHCStackRowSoftmax). Each declares the package's stream layout
(streams="replicated": the hidden copied into the streams, summed at the end).
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, Subject


def _factory(class_name: str):
    def factory(d, bodies, *, dtype=torch.float32, device=None):
        import hiddenmhc  # lazily: loading this file never fails

        return getattr(hiddenmhc, class_name)(d, list(bodies), streams=4).to(dtype=dtype, device=device)
    factory.__name__ = class_name
    return factory


def _unavailable() -> str | None:
    try:
        import hiddenmhc  # noqa: F401
    except ImportError as exc:
        return f"hiddenmhc does not import: {exc}"
    return None


def _subject(name: str, class_name: str, streams: str = "replicated") -> Subject:
    return Subject(
        name=name,
        description=f"hiddenmhc.{class_name} behind the mhc_stack interface",
        mechanisms={"mhc_stack": _factory(class_name)},
        capabilities={"mhc_stack": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",),
                                              streams=streams)},
        unavailable_reason=_unavailable,
        modules={"mhc_stack": ("hiddenmhc",)},
    )


SUBJECT = _subject("hiddenmhc", "MHCStack")
DETACHED_SKIP = _subject("hiddenmhc-fastmix", "MHCStackFastMix")
DEAD_PARAMETER = _subject("hiddenmhc-staticres", "MHCStackStaticRes")
NEVER_RESET = _subject("hiddenmhc-annealed", "MHCStackAnnealed")
ROWS_ONLY = _subject("hiddenmhc-rowsoftmax", "MHCStackRowSoftmax")
