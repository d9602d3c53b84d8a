"""Mechanism `block_attnres`: Full and Block Attention Residuals over L sublayers (arXiv:2603.15031, Eqs. 5-6, Alg. 1)."""
from __future__ import annotations

from typing import Annotated, Any, Callable, Protocol, Sequence

import torch

from .markers import Doc, Param
from .mechanism import Mechanism


class BlockAttnResModule(Protocol):
    """The stack of L sublayers in N blocks; module(h1, mode=) runs it.

    Eq. 5: block n sums its sublayers' outputs, b_n^i = b_n^(i-1) + f_l(h_l), b_n^0 = 0.
    Eq. 6: layer i of block n attends [b_0, ..., b_(n-1)] (i = 1) or [b_0, ..., b_(n-1), b_n^(i-1)]
    (i >= 2), with b_0 = h1, the embedding, a source of its own; each h_l is depth attention
    (Eqs. 2-4, one softmax) with the pseudo-query queries[l] and the module's convention and eps.
    The output h_out is the same attention over every completed source [b_0 .. b_N] with
    `output_query`.

    The gates read which sources each sublayer attended from the inputs the sublayers receive:
    every sublayer is called exactly once per forward, in order, with h_l [..., d], and its
    output [..., d] is used as returned. Sublayers that are nn.Modules may be registered as
    child modules (the reference: `sublayer_modules`); their parameters are theirs, not part of
    this interface. The gates write `queries` and `output_query` through named_parameters().
    """

    queries: Annotated[torch.nn.Parameter, Param("[L, d]", "w_l, one pseudo-query per sublayer (§5)", init="0")]
    output_query: Annotated[torch.nn.Parameter, Param("[d]", "the pseudo-query of the output aggregation", init="0")]
    gains: Annotated[torch.nn.Parameter, Param("[L, d]", "RMSNorm gains on the keys, one per sublayer", init="1",
                                               when={"learned_gain": True})]
    output_gain: Annotated[torch.nn.Parameter, Param("[d]", "RMSNorm gain of the output aggregation", init="1",
                                                     when={"learned_gain": True})]
    d: Annotated[int, Doc("the width")]
    L: Annotated[int, Doc("the number of sublayers, len(sublayers)")]
    num_blocks: Annotated[int, Doc("N; N = L is Full AttnRes")]

    def forward(
        self,
        h1: Annotated[torch.Tensor, Doc("the embedding h_1 = b_0", shape="[..., d]")],
        *,
        mode: Annotated[str | None, Doc("'direct' (one softmax per h_l) or 'two_phase' (Alg. 1: inter-block "
                                        "scores for the whole block, then the online-softmax merge); "
                                        "None = the constructor's mode")] = None,
        return_trace: Annotated[bool, Doc("also return one dict per sublayer: layer (1-based), block, position, "
                                          "sources (names 'b0', 'b1', 'b2^1', ...), h, alpha, y; tensors in the "
                                          "autograd graph; a subject may raise NotRun")] = False,
    ) -> Annotated[torch.Tensor | tuple[torch.Tensor, list[dict[str, Any]]],
                   Doc("h_out, or (h_out, trace) with return_trace", shape="[..., d]")]:
        """Run the L sublayers from h1; both modes give the same h_l (Alg. 1 is exact)."""
        ...


class BlockAttnResFactory(Protocol):
    """module = factory(sublayers, d, num_blocks, convention=, eps=, mode=, dtype=, device=).

    Blocks hold S = ceil(L / N) consecutive sublayers, the last the remainder (Eq. 5).
    ValueError for num_blocks outside [1, L] or not giving exactly N blocks of S, an unknown
    convention, mode or route. The pseudo-queries start at zero (§5). NotRun for a convention,
    a learned gain, a mode, a route or a dtype the subject cannot drive.
    """

    def __call__(
        self,
        sublayers: Annotated[Sequence[Callable[[torch.Tensor], torch.Tensor]],
                             Doc("f_1 .. f_L, each [..., d] -> [..., d]")],
        d: Annotated[int, Doc("the width")],
        num_blocks: Annotated[int, Doc("N, the number of blocks (N = L: Full AttnRes)")],
        *,
        convention: Annotated[str, Doc("score convention of every aggregation, one of SCORE_CONVENTIONS "
                                       "(fidelity.mechanisms.depth_attention)")] = "paper",
        eps: Annotated[float, Doc("the key norm's eps, inside the root")] = 1e-6,
        learned_gain: Annotated[bool, Doc("register RMSNorm gains `gains` and `output_gain`")] = False,
        mode: Annotated[str, Doc("default mode of forward: 'direct' or 'two_phase'")] = "direct",
        backward: Annotated[str, Doc("gradient route of the depth attention: 'autograd' or 'manual'")] = "autograd",
        dtype: Annotated[torch.dtype, Doc("dtype of the parameters")] = torch.float32,
        device: Annotated[torch.device | str | None, Doc("device of the parameters")] = None,
    ) -> BlockAttnResModule:
        ...


MECHANISM = Mechanism(
    name="block_attnres",
    summary="Full and Block AttnRes: L sublayers in N blocks, each input a depth attention over the blocks (Eqs. 5-6)",
    kind="module",
    interface=BlockAttnResFactory,
    module_interface=BlockAttnResModule,
    equations=("attnres.eq1", "attnres.eq2", "attnres.eq4", "attnres.eq5", "attnres.eq6", "attnres.alg1", "attnres.phi",
               "attnres.layer_def", "attnres.block_limits", "attnres.block_defects", "attnres.fig2_forward",
               "attnres.score_conventions", "attnres.init_zero_query", "attnres.table5.fn3",
               "attnres.table5.block_row", "attnres.eps", "attnres.rmsnorm_gain", "attnres.stateless"),
)
