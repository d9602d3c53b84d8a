"""The PyTorch reference subject: fidelity.impl.torch behind the interfaces of interfaces.py."""
from __future__ import annotations

from fidelity.impl.torch import BlockAttnRes, HyperConnection, LoopModel, MhcResidual, depth_attend, sinkhorn

from .subject import Subject


_PKG = "fidelity.impl.torch"


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
    },
    backward_routes={
        "depth_attention": ("autograd", "manual"),
        "sinkhorn": ("autograd", "manual"),
        "block_attnres": ("autograd",),
        "mhc_residual": ("autograd",),
        "hyper_connection": ("autograd",),
        "loop_model": ("autograd",),
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
    },
)
