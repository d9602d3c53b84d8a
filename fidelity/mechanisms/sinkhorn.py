"""Mechanism `sinkhorn`: the Sinkhorn-Knopp projection of mHC (arXiv:2512.24880, Eq. 9)."""
from __future__ import annotations

from typing import Annotated, Protocol

import torch

from .markers import Doc
from .mechanism import Mechanism


class SinkhornProjection(Protocol):
    """M = fn(logits, t_max=, backward=): Eq. 9 on the logits H~res.

    M(0) = exp(logits); each of the t_max steps is a column normalisation T_c (every column
    sums to 1) THEN a row normalisation T_r; return M(t_max), exactly t_max steps, no early
    stop (t_max = 0 returns exp(logits)). Leading axes are independent matrices.

    Contract: compute in the dtype and on the device of `logits`; never cast, floor or clamp
    silently. Gradients reach `logits`. ValueError for logits that are not [..., n, n], a
    negative t_max or an unknown route. NotRun for a route or a dtype the subject cannot drive.
    A forward-only subject (Capability backward=("none",)) is called without `backward=`: the
    forward gates run on it, the gradient gates do not.
    """

    def __call__(
        self,
        logits: Annotated[torch.Tensor, Doc("H~res, the logits of the residual mixing matrix", shape="[..., n, n]")],
        *,
        t_max: Annotated[int, Doc("the number of column-then-row steps (Table 5: 20)")] = 20,
        backward: Annotated[str, Doc("gradient route: 'autograd' or 'manual' (a hand-written backward)")] = "autograd",
    ) -> Annotated[torch.Tensor, Doc("M(t_max), doubly stochastic up to convergence", shape="[..., n, n]")]:
        ...


MECHANISM = Mechanism(
    name="sinkhorn",
    summary="Sinkhorn-Knopp projection of exp(logits), t_max column-then-row normalisations (mHC Eq. 9)",
    kind="function",
    interface=SinkhornProjection,
    module_interface=None,
    equations=("mhc.eq6", "mhc.eq9", "mhc.table5.tmax", "mhc.init_static_bias", "mhc.composite", "mhc.stateless"),
)
