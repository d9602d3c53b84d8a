"""The PyTorch reference subject: fidelity.impl.torch behind the interfaces of fidelity.mechanisms."""
from __future__ import annotations

from fidelity.impl.torch import (BlockAttnRes, HcStack, HyperConnection, LoopModel, MhcResidual, MhcStack,
                                  depth_attend, sinkhorn)

from .subject import Capability, Subject


_PKG = "fidelity.impl.torch"


# The dtypes the gates hold the reference to; torch would run others, unverified.
_DTYPES = ("float32", "float64")
_DEVICES = ("cpu", "cuda")
_BOTH_ROUTES = Capability(_DTYPES, _DEVICES, ("autograd", "manual"))
_AUTOGRAD = Capability(_DTYPES, _DEVICES, ("autograd",))


def available() -> str | None:
    """The reference runs wherever torch imports: always available (None = no reason it cannot run)."""
    return None


SUBJECT = Subject(
    name="torch",
    description="PyTorch reference implementations (fidelity/impl/torch), float32/float64, CPU and CUDA",
    mechanisms={
        "depth_attention": depth_attend,
        "sinkhorn": sinkhorn,
        "block_attnres": BlockAttnRes,
        "mhc_residual": MhcResidual,
        "hyper_connection": HyperConnection,
        "loop_model": LoopModel,
        "mhc_stack": MhcStack,
        "hc_stack": HcStack,
    },
    capabilities={
        "depth_attention": _BOTH_ROUTES,
        "sinkhorn": _BOTH_ROUTES,
        # BlockAttnRes's `backward=` is its interface's route keyword: "manual" runs depth attention's
        # hand-written adjoint inside the module, so the module gates hold both routes
        "block_attnres": _BOTH_ROUTES,
        # the other modules' gradient is autograd; their `sinkhorn_backward` keyword picks the route of the
        # Sinkhorn inside, which the gates ask for by that keyword (and the function gates hold)
        "mhc_residual": _AUTOGRAD,
        "hyper_connection": _AUTOGRAD,
        "loop_model": _AUTOGRAD,
        "mhc_stack": Capability(_DTYPES, _DEVICES, ("autograd",), streams="replicated"),  # mhc.s3: n copies
        "hc_stack": Capability(_DTYPES, _DEVICES, ("autograd",), streams="replicated"),  # hc.setup: n copies
    },
    unavailable_reason=available,
    modules={
        "depth_attention": (f"{_PKG}.depth_attention",),
        "sinkhorn": (f"{_PKG}.sinkhorn",),
        "block_attnres": (f"{_PKG}.attnres", f"{_PKG}.depth_attention"),
        "mhc_residual": (f"{_PKG}.mhc", f"{_PKG}.sinkhorn", f"{_PKG}.rmsnorm"),
        "hyper_connection": (f"{_PKG}.hyper_connections",),
        "loop_model": (f"{_PKG}.loop_model", f"{_PKG}.mhc", f"{_PKG}.sinkhorn", f"{_PKG}.rmsnorm",
                       f"{_PKG}.depth_attention", f"{_PKG}.hyper_connections"),
        "mhc_stack": (f"{_PKG}.mhc_stack", f"{_PKG}.mhc", f"{_PKG}.sinkhorn", f"{_PKG}.rmsnorm"),
        "hc_stack": (f"{_PKG}.hc_stack", f"{_PKG}.hyper_connections"),
    },
)
