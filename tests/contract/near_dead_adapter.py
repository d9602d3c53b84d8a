"""An adapter for faintmhc (tests/contract/faintmhc: mHC whose H_res, or whose H_post logits, enter scaled by
1e-30), written from its README alone: RES_SCALED wraps FaintResStack, POST_SCALED FaintPostStack, each as the mhc_stack mechanism, hidden in and hidden out, around the gates' own bodies; it declares the
package's replicated streams (the hidden copied into the streams, summed at the end)."""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, Subject


def _factory(class_name: str):
    def factory(d, bodies, *, dtype=torch.float32, device=None):
        import faintmhc  # lazily: loading this file never fails

        return getattr(faintmhc, class_name)(d, list(bodies), streams=4).to(dtype=dtype, device=device)
    factory.__name__ = class_name
    return factory


def _unavailable() -> str | None:
    try:
        import faintmhc  # noqa: F401
    except ImportError as exc:
        return f"faintmhc does not import: {exc}"
    return None


def _subject(name: str, class_name: str) -> Subject:
    return Subject(
        name=name,
        description=f"faintmhc.{class_name} behind the mhc_stack interface",
        mechanisms={"mhc_stack": _factory(class_name)},
        capabilities={"mhc_stack": Capability(dtypes=("float32", "float64"), devices=("cpu",),
                                              backward=("autograd",), streams="replicated")},
        unavailable_reason=_unavailable,
        modules={"mhc_stack": ("faintmhc", "hiddenmhc")},
    )


RES_SCALED = _subject("faintmhc-res", "FaintResStack")
POST_SCALED = _subject("faintmhc-post", "FaintPostStack")
