"""A small weight-shared loop model that hosts the model-level gates.

One shared body (an MLP d -> hidden_mult*d -> d) runs T times. Iteration k reads
h_ctx = h + e_k (an iteration embedding), runs the body, and writes the residual
with exactly ONE arm:

    rezero   h = h_ctx + y * residual_scale                    (residual_scale init 1.0)
    attnres  h = depth_attend([h_0, y_0, ..., y_k], w_k)        (after the body; record 000 §4)
    mhc      x = MhcResidual(x_l = h_ctx, body)                  (ONE shared block, every iteration; record 004 §3)
    hc       H = HyperConnection(H_ctx, body)                    (ONE shared connection, every iteration)

A readout (linear d -> vocab) runs after EVERY iteration; forward returns the T logits.

Every arm's parameters exist in every model and `set_arm` switches the arm in
place, so two arms can be compared on SHARED weights (two models built in one
process are two random draws). `residual_scale` exists in every arm; only ReZero
reads it. Initial weights (tier c, ours) are drawn from the explicit generator in a
fixed order; the global RNG is never touched.

Multi-stream states: the "sliced" mHC layout keeps the hidden [.., d] (its streams are
slices of it, so h_ctx is x_l exactly); the "paper" mHC layout and HC keep n replicated
streams [.., n, d] from expand(h_0), add e_k to every stream, and read out their sum.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS

from .depth_attention import depth_attend
from .hyper_connections import HyperConnection
from .mhc import LAYOUTS, MhcResidual

ARMS = ("rezero", "attnres", "mhc", "hc")
ACTIVATIONS = ("tanh", "gelu")


@dataclass(frozen=True)
class LoopConfig:
    """Configuration of `LoopModel`. `arm` names exactly one residual arm."""

    vocab: int = 16
    d: int = 8
    T: int = 3
    arm: str = "rezero"
    mhc_streams: int = 2
    mhc_layout: str = "sliced"
    hc_streams: int = 2
    hc_dynamic: bool = True
    score_convention: str = "paper"
    attnres_eps: float = 1e-6
    mhc_eps: float = 1e-20
    mhc_dynamic_init_std: float = 0.0
    sinkhorn_t_max: int = 20
    hidden_mult: int = 2
    activation: str = "tanh"

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if not isinstance(self.arm, str):
            raise ValueError(
                f"LoopConfig: arm names exactly one residual arm, as a string, got {self.arm!r}; "
                f"the arms {ARMS} each replace the same residual write and cannot be combined"
            )
        if self.arm not in ARMS:
            raise ValueError(f"LoopConfig: unknown residual arm {self.arm!r}; expected exactly one of {ARMS}")
        for name in ("vocab", "d", "T", "hidden_mult", "sinkhorn_t_max"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"LoopConfig: {name} must be an int >= 1, got {value!r}")
        if not isinstance(self.mhc_streams, int) or self.mhc_streams < 1:
            raise ValueError(
                f"LoopConfig: mhc_streams must be >= 1 (got {self.mhc_streams!r}); mhc_streams = 0 would silently "
                "train an empty or clamped n = 1 residual stream"
            )
        if not isinstance(self.hc_streams, int) or self.hc_streams < 1:
            raise ValueError(f"LoopConfig: hc_streams must be >= 1 (got {self.hc_streams!r})")
        if self.mhc_layout not in LAYOUTS:
            raise ValueError(f"LoopConfig: unknown mhc_layout {self.mhc_layout!r}; expected one of {LAYOUTS}")
        if self.mhc_layout == "sliced" and self.d % self.mhc_streams != 0:
            raise ValueError(
                f"LoopConfig: the sliced mHC layout splits d = {self.d} into mhc_streams = {self.mhc_streams} "
                "equal slices; d must be divisible by mhc_streams"
            )
        if self.score_convention not in SCORE_CONVENTIONS:
            raise ValueError(
                f"LoopConfig: unknown score_convention {self.score_convention!r}; expected one of {SCORE_CONVENTIONS}"
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"LoopConfig: unknown activation {self.activation!r}; expected one of {ACTIVATIONS}")


class LoopModel(nn.Module):
    """Embedding, T iterations of one shared body with one residual arm, a readout every iteration.

    Parameters: embed [vocab, d], iter_embed [T, d], body_w1 [hd, d], body_b1 [hd], body_w2 [d, hd],
    body_b2 [d], readout_w [vocab, d], readout_b [vocab], residual_scale (scalar, 1.0),
    attnres_queries [T, d] (zero), mhc.* (MhcResidual), hc.* (HyperConnection).
    """

    def __init__(
        self,
        config: LoopConfig,
        generator: torch.Generator,
        *,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(generator, torch.Generator):
            raise TypeError("LoopModel needs an explicit torch.Generator; the global RNG is never used")
        config.validate()
        self.config = config
        d, hd, V, T = config.d, config.hidden_mult * config.d, config.vocab, config.T
        kw = dict(dtype=dtype, device=device)

        def normal(*shape: int, std: float) -> nn.Parameter:
            draw = torch.randn(*shape, generator=generator, dtype=dtype, device=generator.device)
            return nn.Parameter((draw * std).to(device=device))

        def uniform(*shape: int, bound: float) -> nn.Parameter:
            draw = torch.rand(*shape, generator=generator, dtype=dtype, device=generator.device)
            return nn.Parameter(((2.0 * draw - 1.0) * bound).to(device=device))

        self.embed = normal(V, d, std=1.0)
        self.iter_embed = normal(T, d, std=0.1)
        self.body_w1 = uniform(hd, d, bound=d ** -0.5)
        self.body_b1 = uniform(hd, bound=d ** -0.5)
        self.body_w2 = uniform(d, hd, bound=hd ** -0.5)
        self.body_b2 = uniform(d, bound=hd ** -0.5)
        self.readout_w = uniform(V, d, bound=d ** -0.5)
        self.readout_b = uniform(V, bound=d ** -0.5)
        self.residual_scale = nn.Parameter(torch.tensor(1.0, **kw))  # rezero: s, init 1.0
        self.attnres_queries = nn.Parameter(torch.zeros(T, d, **kw))  # attnres.s5: one zero-init query per slot
        n = config.mhc_streams
        C = d // n if config.mhc_layout == "sliced" else d
        self.mhc = MhcResidual(
            n, C, layout=config.mhc_layout, generator=generator, eps=config.mhc_eps,
            dynamic_init_std=config.mhc_dynamic_init_std, t_max=config.sinkhorn_t_max, **kw,
        )
        self.hc = HyperConnection(config.hc_streams, d, 0, dynamic=config.hc_dynamic, generator=generator, **kw)

    @property
    def arm(self) -> str:
        return self.config.arm

    def set_arm(self, arm: str) -> None:
        """Switch the residual arm in place; the weights stay shared."""
        self.config = dataclasses.replace(self.config, arm=arm)

    def body(self, x: torch.Tensor) -> torch.Tensor:
        """The ONE shared body: d -> hidden_mult*d -> d."""
        act = torch.tanh if self.config.activation == "tanh" else F.gelu
        return act(x @ self.body_w1.T + self.body_b1) @ self.body_w2.T + self.body_b2

    def _hidden(self, state: torch.Tensor) -> torch.Tensor:
        """The hidden [.., d] of the arm's state."""
        if self.arm == "hc":
            return self.hc.readout(state)
        if self.arm == "mhc" and self.config.mhc_layout == "paper":
            return self.mhc.readout(state)
        return state

    def forward(self, tokens: torch.Tensor, *, return_trace: bool = False):
        """Return the T per-iteration logits [.., vocab] (and a per-iteration trace if asked)."""
        cfg, arm = self.config, self.arm
        h0 = F.embedding(tokens, self.embed)  # h_0: the token embedding
        state = h0
        if arm == "hc":
            state = self.hc.expand(h0)  # hc.s2.1: n replicated streams
        elif arm == "mhc" and cfg.mhc_layout == "paper":
            state = self.mhc.expand(h0)  # mhc.s3: n replicated streams
        sources = [h0]  # attnres.eq3: v_0 = h_0, a permanent source
        logits, trace = [], []
        for k in range(cfg.T):
            ctx = state + self.iter_embed[k]  # h_ctx = h + e_k (every stream gets e_k)
            record = {"k": k, "h_ctx": ctx}
            if arm in ("rezero", "attnres"):
                y = self.body(ctx)  # y_k = f(h_ctx), the ONE shared body
                record["y"] = y
            if arm == "rezero":
                state = ctx + y * self.residual_scale  # rezero: h = h_ctx + y * residual_scale
            elif arm == "attnres":
                sources.append(y)  # attnres.eq3: v_{k+1} = y_k, the body's own output is a source
                state, alpha = depth_attend(
                    torch.stack(sources), self.attnres_queries[k], convention=cfg.score_convention, eps=cfg.attnres_eps
                )  # attnres.eq2/4 after the body: mixture over {h_0, y_0..y_k}
                record["alpha"] = alpha
            elif arm == "mhc":
                x_l = self.mhc.expand(ctx) if cfg.mhc_layout == "sliced" else ctx  # x_l = h_ctx
                x_next = self.mhc(x_l, self.body)  # mhc.eq3 at the loop write, ONE shared block
                state = self.mhc.readout(x_next) if cfg.mhc_layout == "sliced" else x_next
                if return_trace:
                    record["coefficients"] = self.mhc.coefficients(x_l)
            else:
                state = self.hc(ctx, self.body)  # hc.eq5 at the loop write, ONE shared connection
            hidden = self._hidden(state)
            logits.append(hidden @ self.readout_w.T + self.readout_b)  # readout at every iteration
            record.update(state=state, hidden=hidden)
            trace.append(record)
        return (logits, trace) if return_trace else logits

    def composite_h_res(self, x: torch.Tensor, T: int | None = None) -> torch.Tensor:
        """H_res^T [.., n, n]: the shared block's H_res at hidden x [.., d], multiplied over T iterations.

        Exactly the loop's composite (mhc Eq. 4) when H_res does not depend on x
        (phi_res = 0 or alpha_res = 0, as at init); otherwise the composite at a fixed x.
        """
        T = self.config.T if T is None else T
        _, _, h_res = self.mhc.coefficients(self.mhc.expand(x))
        composite = torch.eye(self.mhc.n, dtype=h_res.dtype, device=h_res.device).expand_as(h_res)
        for _ in range(T):
            composite = h_res @ composite  # mhc.eq4: one H_res factor per iteration of the shared block
        return composite
