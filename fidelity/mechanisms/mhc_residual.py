"""Mechanism `mhc_residual`: the mHC residual connection over n streams (arXiv:2512.24880, Eqs. 3, 7, 8)."""
from __future__ import annotations

from typing import Annotated, Callable, Protocol

import torch

from .markers import Doc, Param
from .mechanism import Mechanism

LAYOUTS = ("paper", "sliced")
"""Stream layouts: "paper", n replicated copies of a C-wide state, the body at width C on
u = H_pre x; "sliced", a hidden of width D = nC split into n slices, the body at full width D
on the hidden (H_pre is computed but not wired)."""


class MhcResidualModule(Protocol):
    """One mHC residual connection; module(x, body) = x_{l+1}.

    Eq. 7: x' = RMSNorm(vec x) over nC (mean form, eps, no gain); H~pre = alpha_pre (x' phi_pre)
    + b_pre, H~post = alpha_post (x' phi_post) + b_post, H~res = alpha_res mat(x' phi_res) + b_res
    (mat row-major). Eq. 8: H_pre = sigmoid, H_post = 2 sigmoid, H_res = Sinkhorn(H~res).
    Eq. 3: x_{l+1} = H_res x + H_post^T F(H_pre x); out[j] = sum_i H_res[j, i] x[i] + H_post[j] y[j].

    The parameters are EXACTLY these nine (a gate counts named_parameters() and checks every
    shape against the oracle's table); the gates write them with getattr(module, name).copy_().
    The initial values are the defaults of the factory (static_init, alpha_init, dynamic_init_std).
    """

    phi_pre: Annotated[torch.nn.Parameter, Param("[nC, n]", "H~pre's dynamic weights", init="0 (dynamic_init_std = 0)")]
    phi_post: Annotated[torch.nn.Parameter, Param("[nC, n]", "H~post's dynamic weights", init="0")]
    phi_res: Annotated[torch.nn.Parameter, Param("[nC, n*n]", "H~res's dynamic weights, mat() row-major", init="0")]
    alpha_pre: Annotated[torch.nn.Parameter, Param("[]", "gating factor of H~pre", init="alpha_init = 0.01")]
    alpha_post: Annotated[torch.nn.Parameter, Param("[]", "gating factor of H~post", init="0.01")]
    alpha_res: Annotated[torch.nn.Parameter, Param("[]", "gating factor of H~res", init="0.01")]
    b_pre: Annotated[torch.nn.Parameter, Param("[n]", "H~pre's static bias", init="static_init = 10")]
    b_post: Annotated[torch.nn.Parameter, Param("[n]", "H~post's static bias", init="0 (2 sigmoid(0) = 1)")]
    b_res: Annotated[torch.nn.Parameter, Param("[n, n]", "H~res's static bias", init="static_init * I = 10 I")]
    n: Annotated[int, Doc("the number of streams")]
    C: Annotated[int, Doc("the width of one stream")]
    layout: Annotated[str, Doc("'paper' or 'sliced' (LAYOUTS)")]

    def expand(self, h: Annotated[torch.Tensor, Doc("a hidden: [.., C] ('paper') or [.., nC] ('sliced')")]
               ) -> Annotated[torch.Tensor, Doc("the stream state: n copies of h ('paper') or h split into n slices",
                                                shape="[.., n, C]")]:
        """The stream state of a hidden."""
        ...

    def readout(self, x: Annotated[torch.Tensor, Doc("a stream state", shape="[.., n, C]")]
                ) -> Annotated[torch.Tensor, Doc("the streams summed ('paper', [.., C]) or concatenated "
                                                 "('sliced', [.., nC])")]:
        """The hidden of a stream state."""
        ...

    def coefficients(self, x: Annotated[torch.Tensor, Doc("a stream state", shape="[.., n, C]")]
                     ) -> Annotated[tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                                    Doc("(H_pre, H_post, H_res) of Eq. 8, the tensors forward uses",
                                        shape="([.., n], [.., n], [.., n, n])")]:
        """Eqs. 7-8 for x; H_res multiplies the streams in Eq. 3's orientation (out[j] = sum_i H_res[j, i] x[i])."""
        ...

    def forward(
        self,
        x: Annotated[torch.Tensor, Doc("the stream state x_l", shape="[.., n, C]")],
        body: Annotated[Callable[[torch.Tensor], torch.Tensor],
                        Doc("the layer F: [.., C] -> [.., C] on u = H_pre x ('paper'), or [.., nC] -> [.., nC] "
                            "on the hidden vec(x) ('sliced'); called once")],
    ) -> Annotated[torch.Tensor, Doc("x_{l+1} of Eq. 3", shape="[.., n, C]")]:
        """Eq. 3. TypeError when x's dtype differs from the parameters'; ValueError for a wrong shape."""
        ...


class MhcResidualFactory(Protocol):
    """module = factory(n, C, layout=, dtype=, device=), with Table 5's defaults.

    ValueError for n < 1 (n = 0 is refused, never clamped to 1), C < 1, an unknown layout,
    dynamic_init_std < 0, or dynamic_init_std > 0 without a generator. NotRun for a layout,
    a dtype, an eps, an init or a route the subject cannot drive.
    """

    def __call__(
        self,
        n: Annotated[int, Doc("the number of streams (Table 5: 4)")],
        C: Annotated[int, Doc("the width of one stream (the hidden is nC wide in the sliced layout)")],
        *,
        layout: Annotated[str, Doc("'paper' or 'sliced' (LAYOUTS)")] = "paper",
        generator: Annotated[torch.Generator | None, Doc("draws phi_* when dynamic_init_std > 0")] = None,
        dtype: Annotated[torch.dtype, Doc("dtype of the parameters")] = torch.float32,
        eps: Annotated[float, Doc("RMSNorm's eps in Eq. 7 (Table 5: 1e-20)")] = 1e-20,
        alpha_init: Annotated[float, Doc("initial alpha_pre, alpha_post, alpha_res (Table 5: 0.01)")] = 0.01,
        static_init: Annotated[float, Doc("b_pre = static_init, b_res = static_init * I; b_post = 0")] = 10.0,
        dynamic_init_std: Annotated[float, Doc("phi_* ~ Normal(0, std) from `generator`; 0 = zeros")] = 0.0,
        t_max: Annotated[int, Doc("Sinkhorn steps for H_res (Table 5: 20)")] = 20,
        sinkhorn_backward: Annotated[str, Doc("gradient route of the Sinkhorn: 'autograd' or 'manual'")] = "autograd",
        device: Annotated[torch.device | str | None, Doc("device of the parameters")] = None,
    ) -> MhcResidualModule:
        ...


MECHANISM = Mechanism(
    name="mhc_residual",
    summary="mHC residual: n streams mixed by a Sinkhorn-projected H_res around one layer body (Eqs. 3, 7, 8)",
    kind="module",
    interface=MhcResidualFactory,
    module_interface=MhcResidualModule,
    equations=("mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", "mhc.eq14", "mhc.eq15", "mhc.eq16", "mhc.eq17_19",
               "mhc.layout.sliced", "mhc.layout.replicated", "mhc.params", "mhc.n_zero_refused",
               "mhc.init_static_bias", "mhc.init_dynamic", "mhc.table5.eps", "mhc.table5.tmax", "mhc.table5.n",
               "mhc.table5.alpha_init", "mhc.stateless"),
)
