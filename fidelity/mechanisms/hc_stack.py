"""Mechanism `hc_stack`: Hyper-Connections as a package exposes them, hidden in and hidden out (arXiv:2409.19606).

The form of `mhc_stack` for HC: a stack built around layer bodies the gates supply, called on a hidden, for a
package that keeps its n streams inside (the `hyper_connection` interface needs the streams and one connection).
Besides what every stack gate holds (the backward is the forward's derivative for the hidden and every parameter,
every parameter gets a gradient, no state between calls), HC's init is visible through the stack: at Eq. 14's
init every stream holds the same vector, so body k reads exactly what a plain residual stack feeds its layer k,
and the summed readout is a whole number of copies of the plain residual stack's output.
"""
from __future__ import annotations

from typing import Annotated, Callable, Protocol, Sequence

import torch

from .markers import Doc
from .mechanism import Mechanism


class HcStackModule(Protocol):
    """stack(h) = the hidden after every layer: h replicated into n streams (§2.1), one hyper-connection per body
    in order (Eq. 5: H^ = B^T T_k(A_m^T H)^T + A_r^T H), the streams summed into a hidden (Alg. 1).

    n, static or dynamic HC and the parameter names are the package's. Its parameters are whatever
    named_parameters() yields beside the bodies' own; every one is expected to take part.
    """

    def forward(self, h: Annotated[torch.Tensor, Doc("a hidden", shape="[.., d]")]
                ) -> Annotated[torch.Tensor, Doc("the hidden after the last layer", shape="[.., d]")]:
        """Every body called once, in order."""
        ...


class HcStackFactory(Protocol):
    """stack = factory(d, bodies, dtype=, device=), at the package's own init (Eq. 14's, if faithful).

    The gates pass no init: what the package ships is what they hold. ValueError for d < 1 or no body.
    NotRun for a dtype or a width the subject cannot drive.
    """

    def __call__(
        self,
        d: Annotated[int, Doc("the hidden's width")],
        bodies: Annotated[Sequence[Callable[[torch.Tensor], torch.Tensor]],
                          Doc("the layers T_k, [.., d] -> [.., d] (torch.nn.Module), one per hyper-connection, "
                              "supplied by the gates")],
        *,
        dtype: Annotated[torch.dtype, Doc("dtype of the parameters")] = torch.float32,
        device: Annotated[torch.device | str | None, Doc("device of the parameters")] = None,
    ) -> HcStackModule:
        ...


MECHANISM = Mechanism(
    name="hc_stack",
    summary="Hyper-Connections hidden in, hidden out: a stack of HC around the gates' layer bodies (Eqs. 5, 14)",
    kind="module",
    interface=HcStackFactory,
    module_interface=HcStackModule,
    equations=("hc.eq5", "hc.eq14", "hc.setup", "hc.readout_sum", "hc.stack_n", "hc.stateless"),
)
