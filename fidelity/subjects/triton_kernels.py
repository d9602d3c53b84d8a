"""The Triton subject: the fused kernels of fidelity/impl/triton behind the interfaces of fidelity.mechanisms.

Importing this module imports neither triton nor the kernels: Triton decides when a kernel
is DEFINED whether it is compiled for a GPU or run by its interpreter (TRITON_INTERPRET=1),
so the kernel modules are imported on the first call, after the test session has set the
variable. `unavailable_reason` says why the kernels cannot run here, without importing them.

Only the route "manual" exists (the hand-written backward kernels): "autograd" raises NotRun,
which the gates report as not run; so do CPU tensors when the kernels were compiled for a GPU.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import sys

from .subject import Capability, Subject

_PKG = "fidelity.impl.triton"
_TRUE = ("1", "true", "yes", "on", "y")


def _interpret_requested() -> bool:
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in _TRUE


def available() -> str | None:
    """None when the kernels can run here: triton installed, and a CUDA device or TRITON_INTERPRET=1."""
    if importlib.util.find_spec("triton") is None:
        return "triton not installed (pip install 'fidelity[triton]')"
    common = sys.modules.get(f"{_PKG}._common")
    if common is not None:  # the kernels are already defined: what counts is how
        if common.INTERPRETED:
            return None
        import torch

        if torch.cuda.is_available():
            return None
        return ("the kernels were defined compiled (TRITON_INTERPRET was not 1 when they were imported) "
                "and there is no CUDA device")
    if _interpret_requested():
        return None
    import torch

    if torch.cuda.is_available():
        return None
    return "no CUDA device and TRITON_INTERPRET is not 1"


def _lazy(module: str, attr: str):
    """A callable that imports `module` on its first call and forwards to `module.attr`."""

    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), attr)(*args, **kwargs)

    call.__name__ = attr
    call.__qualname__ = attr
    call.__doc__ = f"{module}.{attr}, imported on first call (so TRITON_INTERPRET is read then)."
    return call


_LAUNCHES = {"*<global LAUNCHES>": "_common.launch counts kernel launches by name for the benchmarks; no kernel "
                                   "reads the count"}
_KERNELS = Capability(("float32", "float64"), ("cpu", "cuda"), ("manual",),
                      note="cpu only under TRITON_INTERPRET=1 (Triton's interpreter)", keeps_state=_LAUNCHES)
_DEPTH_KERNELS = dataclasses.replace(_KERNELS, keeps_state={
    **_LAUNCHES, f"{_PKG}.depth_attention:_CONSTANTS": "(m, scale, eps) as a tensor, built on the first call per "
                                                       "value, dtype and device and reused, so a GPU call copies nothing"})

SUBJECT = Subject(
    name="triton",
    description="fused Triton kernels with hand-written backward kernels (fidelity/impl/triton); "
                "float32/float64, CUDA, or CPU under TRITON_INTERPRET=1",
    mechanisms={
        "sinkhorn": _lazy(f"{_PKG}.sinkhorn", "sinkhorn"),
        "depth_attention": _lazy(f"{_PKG}.depth_attention", "depth_attend"),
    },
    capabilities={
        "sinkhorn": _KERNELS,
        "depth_attention": _DEPTH_KERNELS,
    },
    unavailable_reason=available,
    modules={
        "sinkhorn": (f"{_PKG}.sinkhorn",),
        "depth_attention": (f"{_PKG}.depth_attention",),
    },
)
