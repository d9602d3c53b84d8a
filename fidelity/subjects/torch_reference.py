"""The PyTorch reference subject: fidelity.impl.torch behind the interfaces of interfaces.py."""
from __future__ import annotations

from fidelity.impl.torch import BlockAttnRes, HyperConnection, LoopModel, MhcResidual, depth_attend, sinkhorn

from .subject import Subject


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
)
