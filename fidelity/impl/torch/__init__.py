"""PyTorch reference implementations, one idea per file.

- rmsnorm.py            RMSNorm (mean form), `rms_norm`, `RMSNorm`
- depth_attention.py    AttnRes depth attention, `depth_attend`, `DepthAttention`
- attnres.py            Full / Block AttnRes (Eqs. 5-6, Alg. 1), `BlockAttnRes`
- sinkhorn.py           log-domain Sinkhorn-Knopp (mHC Eq. 9), `sinkhorn`
- mhc.py                mHC residual (Eqs. 3, 7, 8), `MhcResidual`
- mhc_stack.py          mHC hidden in, hidden out: MhcResidual around each layer body, `MhcStack`
- hyper_connections.py  Hyper-Connections (2409.19606), `HyperConnection`
- hc_stack.py           HC hidden in, hidden out: HyperConnection around each layer body, `HcStack`
- loop_model.py         weight-shared loop model with one residual arm, `LoopConfig`, `LoopModel`
"""
from .attnres import BlockAttnRes, attn_with_stats
from .depth_attention import DepthAttention, convention_constants, depth_attend, score_terms
from .hc_stack import HcStack
from .hyper_connections import HyperConnection
from .loop_model import ARMS, LoopConfig, LoopModel
from .mhc import MhcResidual
from .mhc_stack import MhcStack
from .rmsnorm import RMSNorm, rms_norm
from .sinkhorn import sinkhorn

__all__ = [
    "ARMS",
    "BlockAttnRes",
    "DepthAttention",
    "HcStack",
    "HyperConnection",
    "LoopConfig",
    "LoopModel",
    "MhcResidual",
    "MhcStack",
    "RMSNorm",
    "attn_with_stats",
    "convention_constants",
    "depth_attend",
    "rms_norm",
    "score_terms",
    "sinkhorn",
]
