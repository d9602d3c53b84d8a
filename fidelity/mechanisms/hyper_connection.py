"""Mechanism `hyper_connection`: Hyper-Connections and DHC around one layer (arXiv:2409.19606, Eqs. 1-14)."""
from __future__ import annotations

from typing import Annotated, Callable, Protocol

import torch

from .markers import Doc, Param, Submodule
from .mechanism import Mechanism


class LayerNormModule(Protocol):
    """H_bar = norm(H) of Eq. 10: torch.nn.LayerNorm(d) over the last axis (per stream), eps 1e-5, affine."""

    weight: Annotated[torch.nn.Parameter, Param("[d]", "LayerNorm's scale", init="1")]
    bias: Annotated[torch.nn.Parameter, Param("[d]", "LayerNorm's shift", init="0")]

    def __call__(self, H: Annotated[torch.Tensor, Doc("a hyper hidden", shape="[.., n, d]")]
                 ) -> Annotated[torch.Tensor, Doc("H_bar, each stream normalised", shape="[.., n, d]")]:
        ...


class HyperConnectionModule(Protocol):
    """One hyper-connection of expansion rate n; module(H, body) = H^ (Eq. 5).

    alpha = [A_m | A_r] [.., n, n+1], beta = B [.., n]. Static HC: alpha = static_alpha,
    beta = static_beta. DHC (Eqs. 10-13): H_bar = layer_norm(H), beta = beta_scale *
    tanh(H_bar dynamic_beta_fn) + static_beta, alpha = alpha_scale * tanh(H_bar dynamic_alpha_fn)
    + static_alpha. Eq. 3/4: mix = alpha^T H [.., n+1, d]; row 0 is the layer input h_0 = A_m^T H,
    rows 1.. are H' = A_r^T H. Eq. 5: H^ = beta^T body(h_0) + H'.
    Eq. 14 init at layer k: static_beta = 1, static_alpha = [e_(k mod n) | I], dynamic weights 0.
    The gates write dynamic_alpha_fn, dynamic_beta_fn, alpha_scale, beta_scale by attribute.
    """

    static_beta: Annotated[torch.nn.Parameter, Param("[n]", "B, the static depth-connection weights", init="1")]
    static_alpha: Annotated[torch.nn.Parameter, Param("[n, n+1]", "[A_m | A_r], the static width connections",
                                                      init="[e_(k mod n) | I]")]
    dynamic_alpha_fn: Annotated[torch.nn.Parameter, Param("[d, n+1]", "[W_m | W_r] of Eqs. 12-13", init="0",
                                                          when={"dynamic": True})]
    dynamic_beta_fn: Annotated[torch.nn.Parameter, Param("[d]", "W_beta of Eq. 11", init="0",
                                                         when={"dynamic": True})]
    alpha_scale: Annotated[torch.nn.Parameter, Param("[]", "s_alpha", init="scale_init = 0.01",
                                                     when={"dynamic": True})]
    beta_scale: Annotated[torch.nn.Parameter, Param("[]", "s_beta", init="scale_init = 0.01",
                                                    when={"dynamic": True})]
    layer_norm: Annotated[LayerNormModule, Submodule("norm(H) of Eq. 10, called by the gates as layer_norm(H)",
                                                     when={"dynamic": True})]
    n: Annotated[int, Doc("the expansion rate (number of streams)")]
    d: Annotated[int, Doc("the width of one stream")]
    layer_index: Annotated[int, Doc("k, the layer's index (A_m = e_(k mod n) at init)")]
    dynamic: Annotated[bool, Doc("DHC (True) or static HC (False)")]

    def expand(self, h: Annotated[torch.Tensor, Doc("a hidden", shape="[.., d]")]
               ) -> Annotated[torch.Tensor, Doc("H^0: n replicated copies of h", shape="[.., n, d]")]:
        """The hyper hidden of a hidden (§2.1)."""
        ...

    def readout(self, H: Annotated[torch.Tensor, Doc("a hyper hidden", shape="[.., n, d]")]
                ) -> Annotated[torch.Tensor, Doc("the streams summed (Alg. 1)", shape="[.., d]")]:
        """The hidden of a hyper hidden."""
        ...

    def connections(self, H: Annotated[torch.Tensor, Doc("a hyper hidden", shape="[.., n, d]")]
                    ) -> Annotated[tuple[torch.Tensor, torch.Tensor],
                                   Doc("(alpha, beta), the tensors forward uses; static HC may return them "
                                       "unbatched, [n, n+1] and [n]", shape="([.., n, n+1], [.., n])")]:
        """The width and depth connections for H (Eqs. 11-13; Eq. 1 when static)."""
        ...

    def forward(
        self,
        H: Annotated[torch.Tensor, Doc("the hyper hidden", shape="[.., n, d]")],
        body: Annotated[Callable[[torch.Tensor], torch.Tensor],
                        Doc("the layer T: [.., d] -> [.., d] on h_0 = A_m^T H; called once")],
    ) -> Annotated[torch.Tensor, Doc("H^ = beta^T T(h_0) + A_r^T H (Eq. 5)", shape="[.., n, d]")]:
        """Eqs. 3-5. ValueError when H is not [.., n, d]."""
        ...


class HyperConnectionFactory(Protocol):
    """module = factory(n, d, layer_index, dynamic=, dtype=, device=), at Eq. 14's init.

    ValueError for n < 1, d < 1 or layer_index < 0. NotRun for static HC, a dtype or an init the
    subject cannot drive.
    """

    def __call__(
        self,
        n: Annotated[int, Doc("the expansion rate (number of streams)")],
        d: Annotated[int, Doc("the width of one stream")],
        layer_index: Annotated[int, Doc("k, the layer's index (>= 0)")],
        *,
        dynamic: Annotated[bool, Doc("DHC (True: Eqs. 10-13) or static HC (False: Eq. 1)")] = True,
        generator: Annotated[torch.Generator | None, Doc("accepted for a uniform signature; Eq. 14's init "
                                                         "draws nothing")] = None,
        dtype: Annotated[torch.dtype, Doc("dtype of the parameters")] = torch.float32,
        scale_init: Annotated[float, Doc("initial alpha_scale and beta_scale")] = 0.01,
        device: Annotated[torch.device | str | None, Doc("device of the parameters")] = None,
    ) -> HyperConnectionModule:
        ...


MECHANISM = Mechanism(
    name="hyper_connection",
    summary="Hyper-Connections (static HC and DHC): n streams, width and depth connections around one layer",
    kind="module",
    interface=HyperConnectionFactory,
    module_interface=HyperConnectionModule,
    equations=("hc.eq1", "hc.eq2", "hc.eq3", "hc.eq4", "hc.eq5", "hc.eq6", "hc.eq7", "hc.eq8", "hc.eq9", "hc.eq10",
               "hc.eq11", "hc.eq12", "hc.eq13", "hc.eq14", "hc.setup", "hc.readout_sum", "hc.alg2", "hc.alg3",
               "hc.alg2.layer_norm_eps", "hc.alg2.scale_init", "hc.dhc_default", "hc.eq14.static_beta", "hc.stateless"),
)
