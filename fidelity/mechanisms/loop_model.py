"""Mechanism `loop_model`: a small weight-shared loop model with exactly one residual arm (ReZero, AttnRes, mHC, HC)."""
from __future__ import annotations

import inspect
import typing
from typing import Annotated, Any, Callable, Protocol

import torch

from .hyper_connection import HyperConnectionModule
from .markers import Doc, Param, Submodule
from .mechanism import Mechanism
from .mhc_residual import MhcResidualModule

ARMS = ("rezero", "attnres", "mhc", "hc")
"""The residual arms; exactly one writes the residual of every iteration."""


class LoopConfigRecord(Protocol):
    """The model's configuration: a frozen dataclass built with keywords (every field has a default).

    The gates build it as `config_class(factory)(arm=..., d=..., ...)`, so the factory (a class's
    `__init__`, or a function) must annotate its `config` parameter with this dataclass. A field
    `sinkhorn_backward` is optional: when present, the gates also run the mHC arm's "manual" route.
    ValueError for an unknown arm (or one not given as a str: arms are never combined), layout,
    convention or activation, a size < 1, or a sliced layout whose d is not divisible by mhc_streams.
    """

    vocab: Annotated[int, Doc("the vocabulary size")] = 16
    d: Annotated[int, Doc("the hidden width")] = 8
    T: Annotated[int, Doc("the number of iterations of the shared body")] = 3
    arm: Annotated[str, Doc("the residual arm, one of ARMS")] = "rezero"
    mhc_streams: Annotated[int, Doc("n of the mHC arm (>= 1)")] = 2
    mhc_layout: Annotated[str, Doc("layout of the mHC arm, 'paper' or 'sliced' (sliced: d divisible by n)")] = "sliced"
    hc_streams: Annotated[int, Doc("n of the HC arm (>= 1)")] = 2
    hc_dynamic: Annotated[bool, Doc("DHC (True) or static HC (False) in the HC arm")] = True
    score_convention: Annotated[str, Doc("score convention of the AttnRes arm (SCORE_CONVENTIONS)")] = "paper"
    attnres_eps: Annotated[float, Doc("eps of the AttnRes arm's key norm")] = 1e-6
    mhc_eps: Annotated[float, Doc("eps of the mHC arm's RMSNorm (Table 5: 1e-20)")] = 1e-20
    mhc_dynamic_init_std: Annotated[float, Doc("std of the mHC arm's phi_* init (0 = zeros)")] = 0.0
    sinkhorn_t_max: Annotated[int, Doc("Sinkhorn steps of the mHC arm")] = 20
    hidden_mult: Annotated[int, Doc("the body's hidden width is hidden_mult * d")] = 2
    activation: Annotated[str, Doc("the body's activation, 'tanh' or 'gelu'")] = "tanh"


class LoopModelModule(Protocol):
    """Embedding, T iterations of ONE shared body with one residual arm, a readout after every iteration.

    Iteration k reads h_ctx = h + e_k (iter_embed[k], added to every stream) and writes:
        rezero   h = h_ctx + body(h_ctx) * residual_scale
        attnres  h = depth attention over [h_0, y_0, ..., y_k] with attnres_queries[k], y_j = body(h_ctx_j)
        mhc      x = mhc(x_l = h_ctx, body)   (sliced: the state is the hidden [.., d]; paper: n streams)
        hc       H = hc(H_ctx, body)          (n replicated streams from hc.expand(h_0))
    and logits_k = hidden @ readout_w^T + readout_b. Every arm's parameters exist in every model
    and set_arm switches the arm in place, so arms are compared on SHARED weights. Weights are
    drawn from the given generator only (the global RNG is never touched). A parameter outside
    the current arm's graph gets no gradient at all (grad None): the gates check this per name.
    """

    embed: Annotated[torch.nn.Parameter, Param("[vocab, d]", "token embedding; h_0 = embed[tokens]",
                                               init="Normal(0, 1)")]
    iter_embed: Annotated[torch.nn.Parameter, Param("[T, d]", "iteration embeddings e_k", init="Normal(0, 0.1^2)")]
    body_w1: Annotated[torch.nn.Parameter, Param("[hidden_mult*d, d]", "the body's first weight",
                                                 init="Uniform(-d^-1/2, d^-1/2)")]
    body_b1: Annotated[torch.nn.Parameter, Param("[hidden_mult*d]", "the body's first bias",
                                                 init="Uniform(-d^-1/2, d^-1/2)")]
    body_w2: Annotated[torch.nn.Parameter, Param("[d, hidden_mult*d]", "the body's second weight",
                                                 init="Uniform(-hd^-1/2, hd^-1/2)")]
    body_b2: Annotated[torch.nn.Parameter, Param("[d]", "the body's second bias", init="Uniform(-hd^-1/2, hd^-1/2)")]
    readout_w: Annotated[torch.nn.Parameter, Param("[vocab, d]", "the readout's weight", init="Uniform(-d^-1/2, d^-1/2)")]
    readout_b: Annotated[torch.nn.Parameter, Param("[vocab]", "the readout's bias", init="Uniform(-d^-1/2, d^-1/2)")]
    residual_scale: Annotated[torch.nn.Parameter, Param("[]", "ReZero's scale; only the rezero arm reads it",
                                                        init="1")]
    attnres_queries: Annotated[torch.nn.Parameter, Param("[T, d]", "the AttnRes arm's pseudo-queries, one per "
                                                                   "iteration", init="0")]
    mhc: Annotated[MhcResidualModule, Submodule("the mHC arm's ONE shared block: an mhc_residual module with "
                                                "n = mhc_streams, C = d / n (sliced) or d (paper), "
                                                "eps = mhc_eps, t_max = sinkhorn_t_max")]
    hc: Annotated[HyperConnectionModule, Submodule("the HC arm's ONE shared connection: a hyper_connection module "
                                                   "with n = hc_streams, width d, layer_index 0, "
                                                   "dynamic = hc_dynamic")]
    config: Annotated[LoopConfigRecord, Doc("the configuration; config.arm is the current arm")]

    def set_arm(self, arm: Annotated[str, Doc("one of ARMS")]) -> None:
        """Switch the residual arm in place; the weights stay shared."""
        ...

    def body(self, x: Annotated[torch.Tensor, Doc("a hidden", shape="[.., d]")]
             ) -> Annotated[torch.Tensor, Doc("act(x W1^T + b1) W2^T + b2", shape="[.., d]")]:
        """The ONE shared body, d -> hidden_mult * d -> d."""
        ...

    def forward(
        self,
        tokens: Annotated[torch.Tensor, Doc("token ids (int64)", shape="[..]")],
        *,
        return_trace: Annotated[bool, Doc("also return one dict per iteration: k, h_ctx (the state plus e_k), "
                                          "y (body output; rezero and attnres arms), alpha (attnres), "
                                          "coefficients (mhc), state (the state leaving the iteration), "
                                          "hidden; tensors in the autograd graph")] = False,
    ) -> Annotated[list[torch.Tensor] | tuple[list[torch.Tensor], list[dict[str, Any]]],
                   Doc("the T per-iteration logits (and the trace)", shape="T x [.., vocab]")]:
        """Run T iterations from the token embedding."""
        ...

    def composite_h_res(
        self,
        x: Annotated[torch.Tensor, Doc("a hidden", shape="[.., d]")],
        T: Annotated[int | None, Doc("iterations; None = config.T")] = None,
    ) -> Annotated[torch.Tensor, Doc("H_res^T, the shared block's H_res at mhc.expand(x) multiplied T times "
                                     "(mHC Eq. 4)", shape="[.., n, n]")]:
        """The loop's composite residual map of the mHC arm."""
        ...


class LoopModelFactory(Protocol):
    """model = factory(config, generator, dtype=, device=): a class whose __init__, or a function whose
    signature, annotates `config` with the config dataclass (see config_class).

    TypeError when generator is not a torch.Generator (the global RNG is never used).
    """

    def __call__(
        self,
        config: Annotated[LoopConfigRecord, Doc("the configuration (see LoopConfigRecord)")],
        generator: Annotated[torch.Generator, Doc("the explicit source of every initial weight (drawn on its device, "
                                                  "then moved)")],
        *,
        dtype: Annotated[torch.dtype, Doc("dtype of the parameters")] = torch.float32,
        device: Annotated[torch.device | str | None, Doc("device of the parameters")] = None,
    ) -> LoopModelModule:
        ...


def config_class(factory: Callable) -> type:
    """The config dataclass a loop_model factory takes: the annotation of its `config` parameter, read from
    a class's __init__, a function, or a callable object's __call__. TypeError, in one line that says what
    to annotate, when there is none or it does not resolve. A wrapper (functools.wraps) is read through."""
    factory = inspect.unwrap(factory)
    if isinstance(factory, type):
        target = factory.__init__
    elif inspect.isfunction(factory) or inspect.ismethod(factory):
        target = factory
    else:
        target = type(factory).__call__
    name = getattr(factory, "__qualname__", type(factory).__qualname__)
    try:
        hints = typing.get_type_hints(target)
    except Exception as exc:  # a forward reference the factory's module cannot resolve
        raise TypeError(f"loop_model factory {name}: its annotations do not resolve "
                        f"({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    if not isinstance(hints.get("config"), type):
        raise TypeError(f"loop_model factory {name}: annotate its `config` parameter with the config dataclass "
                        "the gates should build (e.g. `config: MyLoopConfig`; see LoopConfigRecord), "
                        f"got {hints.get('config', 'no annotation')!r}")
    return hints["config"]


def _factory_problem(factory: Callable) -> str | None:
    try:
        config_class(factory)
    except TypeError as exc:
        return str(exc)
    return None


MECHANISM = Mechanism(
    name="loop_model",
    summary="Weight-shared loop model: one body run T times, one residual arm (ReZero, AttnRes, mHC or HC)",
    kind="module",
    interface=LoopModelFactory,
    module_interface=LoopModelModule,
    equations=("attnres.eq1", "attnres.eq2", "attnres.eq3", "attnres.placement_loop", "attnres.init_zero_query",
               "mhc.eq3", "mhc.eq4", "mhc.eq6", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.composite",
               "mhc.init_static_bias", "mhc.layout.sliced", "mhc.layout.replicated", "hc.eq5", "attnres.eps",
               "attnres.loop.T", "attnres.loop.config", "attnres.loop.d", "attnres.loop.hc_dynamic",
               "attnres.loop.hc_streams", "attnres.loop.hidden_mult", "attnres.loop.init.embed_std",
               "attnres.loop.init.iter_embed_std", "attnres.loop.init.residual_scale",
               "attnres.loop.init.uniform_exponent", "attnres.loop.mhc_dynamic_init_std", "attnres.loop.mhc_streams",
               "attnres.loop.vocab", "hc.eq11", "hc.eq12", "hc.eq13", "hc.eq14", "mhc.init_dynamic",
               "mhc.table5.alpha_init", "mhc.table5.eps", "mhc.table5.tmax", "attnres.stateless", "mhc.stateless", "hc.stateless"),
    factory_problem=_factory_problem,
)
