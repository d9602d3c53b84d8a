"""An adapter for fakepkg, written as a newcomer would: from the README ("Someone else's
implementation") and `fidelity show mechanism:sinkhorn` alone.

What the docs say to do: provide `sinkhorn(logits, *, t_max=20, backward="autograd")` that
returns M(t_max) of Eq. 9 (M0 = exp(logits), column then row, exactly t_max steps; fakepkg.balance takes the
log of its matrix, so the logits go in as they are), compute in
the input's dtype and device, raise NotRun for what cannot be driven, declare a Capability.

SUBJECT is the correct adapter. The other three are the mistakes the contract must label:
BARE_NOT_IMPLEMENTED refuses float64 with a bare NotImplementedError instead of NotRun,
PACKAGE_VALUE_ERROR uses fakepkg's fast path, which raises ValueError on the gates' n = 8, 16,
SILENT_CAST lets fakepkg accumulate (and return) float64 for float32 input.
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, NotRun, Subject


def _route(backward: str) -> None:
    if backward == "manual":
        raise NotRun("fakepkg has no hand-written backward")
    if backward != "autograd":
        raise ValueError(f"unknown backward route {backward!r}; expected 'autograd' or 'manual'")


def sinkhorn(logits: torch.Tensor, *, t_max: int = 20, backward: str = "autograd") -> torch.Tensor:
    import fakepkg  # lazily: loading this file never fails

    _route(backward)

    return fakepkg.balance(logits, t_max, first="columns")  # Eq. 9: column, then row


def sinkhorn_bare_not_implemented(logits, *, t_max=20, backward="autograd"):
    import fakepkg

    _route(backward)
    if logits.dtype != torch.float32:
        raise NotImplementedError("fakepkg adapter: float32 only")  # the mistake: not NotRun
    return fakepkg.balance(logits, t_max, first="columns")


def sinkhorn_package_value_error(logits, *, t_max=20, backward="autograd"):
    import fakepkg

    _route(backward)
    return fakepkg.balance_fast(logits, t_max)  # raises ValueError for n > 4


def sinkhorn_silent_cast(logits, *, t_max=20, backward="autograd"):
    import fakepkg

    _route(backward)
    return fakepkg.balance(logits, t_max, first="columns", accumulate="float64")


def _unavailable() -> str | None:
    try:
        import fakepkg  # noqa: F401
    except ImportError as exc:
        return f"fakepkg does not import: {exc}"
    return None


def _subject(name: str, fn) -> Subject:
    return Subject(
        name=name,
        description=f"fakepkg's balance behind the sinkhorn interface ({fn.__name__})",
        mechanisms={"sinkhorn": fn},
        capabilities={"sinkhorn": Capability(dtypes=("float32", "float64"), devices=("cpu", "cuda"),
                                             backward=("autograd",))},
        unavailable_reason=_unavailable,
        modules={"sinkhorn": ("fakepkg",)},
    )


SUBJECT = _subject("fakepkg", sinkhorn)
BARE_NOT_IMPLEMENTED = _subject("fakepkg-nie", sinkhorn_bare_not_implemented)
PACKAGE_VALUE_ERROR = _subject("fakepkg-fast", sinkhorn_package_value_error)
SILENT_CAST = _subject("fakepkg-double", sinkhorn_silent_cast)
