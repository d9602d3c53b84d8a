"""Compatibility shim: the interfaces now live in fidelity.mechanisms, one module per mechanism.

Read a mechanism's full interface with `fidelity show mechanism:NAME`; import from
fidelity.mechanisms.<name> in new code.
"""
from __future__ import annotations

from fidelity.mechanisms.block_attnres import BlockAttnResFactory
from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS, DepthAttention, check_depth_attention_inputs
from fidelity.mechanisms.hyper_connection import HyperConnectionFactory
from fidelity.mechanisms.loop_model import LoopModelFactory
from fidelity.mechanisms.mhc_residual import MhcResidualFactory
from fidelity.mechanisms.registry import BUILTIN
from fidelity.mechanisms.sinkhorn import SinkhornProjection

MECHANISMS: tuple[str, ...] = tuple(ref.split(":")[0].rsplit(".", 1)[1] for ref in BUILTIN)
"""The built-in mechanism names. Mechanisms are open: see fidelity.mechanisms.known_mechanisms()."""

__all__ = [
    "MECHANISMS",
    "SCORE_CONVENTIONS",
    "BlockAttnResFactory",
    "DepthAttention",
    "HyperConnectionFactory",
    "LoopModelFactory",
    "MhcResidualFactory",
    "SinkhornProjection",
    "check_depth_attention_inputs",
]
