"""Mechanism `mhc_stack`: mHC as a package exposes it, hidden in and hidden out (arXiv:2512.24880, Eq. 3).

Many packages hide the n streams inside one module that takes a hidden and returns one; the stream
interface of `mhc_residual` cannot wrap them. This form asks only for what such a package has: a stack
built around layer bodies the gates supply (the harness's own body), called on a hidden. The gates
check what holds whatever the stream layout inside: the backward is the forward's derivative, for the
hidden and every parameter (a detached skip path shows here); every parameter and the hidden get a
gradient (a dead parameter is named); the same call after another input gives the same bits (state
kept between calls shows here). Where the package declares the papers' replicated streams
(Capability(streams="replicated")), H_res's columns summing to one (Eq. 6) show too: a zero-body layer
keeps the summed hidden.
"""
from __future__ import annotations

from typing import Annotated, Callable, Protocol, Sequence

import torch

from .markers import Doc
from .mechanism import Mechanism


class MhcStackModule(Protocol):
    """stack(h) = the hidden after every layer: h expanded into n streams, one mHC residual connection per
    body in order (Eq. 3: x_{l+1} = H_res x_l + H_post^T F_l(H_pre x_l)), the streams read out into a hidden.

    The stream layout (replicated or sliced) and the readout are the package's; its capability may say which
    (Capability(streams=...)). Its parameters are whatever named_parameters() yields beside the bodies' own;
    every one is expected to take part.
    """

    def forward(self, h: Annotated[torch.Tensor, Doc("a hidden", shape="[.., d]")]
                ) -> Annotated[torch.Tensor, Doc("the hidden after the last layer", shape="[.., d]")]:
        """Every body called once, in order."""
        ...


class MhcStackFactory(Protocol):
    """stack = factory(d, bodies, dtype=, device=), at the package's own init.

    The gates pass no init: what the package ships is what they hold. ValueError for d < 1 or no body.
    NotRun for a dtype or a width the subject cannot drive.
    """

    def __call__(
        self,
        d: Annotated[int, Doc("the hidden's width")],
        bodies: Annotated[Sequence[Callable[[torch.Tensor], torch.Tensor]],
                          Doc("the layers F_l, [.., d] -> [.., d] (torch.nn.Module), one per mHC connection, "
                              "supplied by the gates")],
        *,
        dtype: Annotated[torch.dtype, Doc("dtype of the parameters")] = torch.float32,
        device: Annotated[torch.device | str | None, Doc("device of the parameters")] = None,
    ) -> MhcStackModule:
        ...


MECHANISM = Mechanism(
    name="mhc_stack",
    summary="mHC hidden in, hidden out: a stack of mHC connections around the gates' layer bodies (Eq. 3)",
    kind="module",
    interface=MhcStackFactory,
    module_interface=MhcStackModule,
    equations=("mhc.eq3", "mhc.eq6", "mhc.eq7", "mhc.eq8", "mhc.layout.replicated", "mhc.stateless", "mhc.table5.n"),
)
