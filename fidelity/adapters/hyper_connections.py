"""Adapter: the `hyper-connections` package (lucidrains, PyPI `hyper-connections`) as a subject.

Mechanisms:
    sinkhorn          hyper_connections.manifold_constrained_hyper_connections.sinkhorn_knopps
                      (LOG_DOMAIN_SUBJECT: .log_domain_sinkhorn_knopps), called as fn(logits, iters=t_max)
    mhc_residual      hyper_connections.ManifoldConstrainedHyperConnections (`mHC`), wrapped by MhcResidualAdapter
    hyper_connection  hyper_connections.HyperConnections, wrapped by HyperConnectionAdapter
    hc_stack          HyperConnections hidden in, hidden out, the package's own composition (StackAdapter)
    mhc_stack         ManifoldConstrainedHyperConnections the same way (StackAdapter), float32 only

What the package computes (read from its source, 0.4.11), in our notation:

Streams. The package folds the n streams into the batch, `(b s) ... d` with s inner. The wrappers
take our stream state [.., n, C], flatten the leading axes to P and reshape to [(P n), C] (index
p * n + s, exactly the package's `(b s)`), and reshape the results back. Nothing else is moved.
`expand` / `readout` are the package's own `get_expand_reduce_stream_functions(n)` (repeat / sum).

Sinkhorn. `sinkhorn_knopps(L, iters)`: L -> L.float(); subtract each column's max (detached: a
column scaling the first column pass removes); exp; then `iters` times an L1 normalisation over
dim -2 (columns) then dim -1 (rows), each `F.normalize(p=1)`, i.e. x / max(sum|x|, 1e-12);
cast back to the input dtype. Column-then-row as Eq. 9, in the linear domain, with a floor
1e-12 on every sum. `log_domain_sinkhorn_knopps`: log_softmax over dim -2 then dim -1, in
float32, exp at the end. Both compute in float32: any other dtype is refused here (NotRun).

mHC (`ManifoldConstrainedHyperConnections(n, dim=C, layer_index=k)`), per stream s, with
r_s = RMSNorm(x_s) = x_s / max(||x_s||_2, 1e-12) * sqrt(C) * (1 + gamma) computed PER STREAM
(Eq. 7 normalises the flattened vec(x) over nC instead) and W = dynamic_alpha_fn[0] [C, n+1]:

    static_alpha [n, 1+n] = [ b_pre | b_res^T ]      (column 0: H~pre's bias; columns 1..n: H~res's, transposed)
    H~pre[s]    = pre_branch_scale * (r_s . W[:, 0]) + static_alpha[s, 0]          -> H_pre = sigmoid
    A~[s, t]    = residual_scale   * (r_s . W[:, 1+t]) + static_alpha[s, 1+t]
    A           = sinkhorn(A~) (columns = over s first, then rows = over t), and the mix is
                  out_res[t] = sum_s A[s, t] x[s], i.e. H_res = A^T in Eq. 3's x_{l+1} = H_res x_l
    H~post[s]   = h_post_scale * (r_s . dynamic_beta_fn) + static_beta[s]            -> H_post = 2 sigmoid
    x_{l+1}[s]  = sum_t H_res[s, t] x[t] + H_post[s] F(sum_s H_pre[s] x[s])

So in Eq. 3's orientation the package's Sinkhorn runs ROW first, then column, on H~res
(its column pass is over the index our H_res calls the column index only after the transpose);
the adapter reports H_res = A^T, the matrix that actually multiplies the streams.

Parameter map of MhcResidualAdapter (our name -> the package's parameter):
    b_pre  [n]       -> static_alpha[:, 0]        } static_alpha is registered as a torch parametrization
    b_res  [n, n]    -> static_alpha[:, 1:]^T     } cat(b_pre, b_res^T) of two leaves, so the package
                                                   reads exactly its own static_alpha and each of our
                                                   names is a leaf with its own .grad
    b_post [n]       -> static_beta
    alpha_pre  (1,)  -> pre_branch_scale   (shape (1,), not (): the package's own shape)
    alpha_res  (1,)  -> residual_scale     (shape (1,))
    alpha_post ()    -> h_post_scale
    phi_pre, phi_post, phi_res -> NotRun: the package has one W [C, n+1] and one
        dynamic_beta_fn [C] SHARED by all streams, each applied to that stream's own norm; Eq. 7's
        phi_pre [nC, n], phi_post [nC, n], phi_res [nC, n^2] see every stream and have no counterpart.
    Unmapped package parameters keep their own names: pkg.dynamic_alpha_fn, pkg.dynamic_beta_fn,
    pkg.norm.gamma.

HC (`HyperConnections(n, dim=d, layer_index=k)`, tanh=True): Eqs. 10-13 with H-bar = the same
per-stream RMSNorm (Alg. 2 / Eq. 10 use a LayerNorm: the package's comment says "they used
layernorm in paper, but rmsnorm is fine"), alpha = dynamic_alpha_scale tanh(H-bar W) + static_alpha,
beta = dynamic_beta_scale tanh(H-bar W_beta) + static_beta, mix = alpha^T H as Eq. 3/4.
Parameter map of HyperConnectionAdapter (every one a leaf of the package, same layout as ours):
    static_beta [n], static_alpha [n, n+1], dynamic_alpha_fn [d, n+1], dynamic_beta_fn [d] -> same names
    alpha_scale -> dynamic_alpha_scale,  beta_scale -> dynamic_beta_scale
    layer_norm  -> NotRun (the package's norm is RMSNorm: pkg.norm.gamma, no LayerNorm)

Refused (NotRun, reported as not run): float64 / any non-float32 mHC or Sinkhorn;
the "sliced" mHC layout; a "manual" backward; dynamic_init_std > 0 (the package zero-inits W);
eps other than the paper's 1e-20 (the package's norm has no epsilon, only the 1e-12 clamp of
F.normalize); static HC (dynamic=False: the package has no static mode). Init keywords: the
package's own init stands (b_pre = e_k, b_res = I, b_post = 1, scales 1e-2; HC as Eq. 14), and an
init it does not offer is NotRun, as the adapter rules say: any static_init (the package has no
static_init * I form), an alpha_init or scale_init other than its own 1e-2. Nothing is written into
the package's parameters.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn
from torch.nn.utils import parametrize

from fidelity.subjects.subject import Capability, NotRun, Subject

from ._common import LastOutput, load, refuse, require_float32, require_route, unavailable

PACKAGE = "hyper-connections"
MHC_MODULE = "hyper_connections.manifold_constrained_hyper_connections"
HC_MODULE = "hyper_connections.hyper_connections"
PAPER_MHC_EPS = 1e-20
PACKAGE_SCALE_INIT = 1e-2  # the package's own init of its mHC scales and HC dynamic scales
_PHI_REASON = (
    "the package has no {name} of Eq. 7's shape [nC, {cols}]: its dynamic weights are one W [C, n+1] "
    "(dynamic_alpha_fn) and one w_beta [C] (dynamic_beta_fn) shared by all streams, each applied to that "
    "stream's own RMS-normalised state"
)


# ---------------------------------------------------------------- Sinkhorn


def _sinkhorn(log_domain: bool) -> Callable:
    fn_name = "log_domain_sinkhorn_knopps" if log_domain else "sinkhorn_knopps"

    def sinkhorn(logits: torch.Tensor, *, t_max: int = 20, backward: str = "autograd") -> torch.Tensor:
        require_route(PACKAGE, "sinkhorn", backward)
        require_float32(PACKAGE, fn_name, logits.dtype)
        return getattr(load(MHC_MODULE), fn_name)(logits, iters=t_max)

    sinkhorn.__doc__ = f"Eq. 9 by hyper_connections' {fn_name}(logits, iters=t_max); float32 only."
    sinkhorn.__name__ = f"hyper_connections_{fn_name}"
    return sinkhorn


# ---------------------------------------------------------------- stream layout


def _require_package_scale(value: float | None, keyword: str, parameters: str) -> None:
    """An init keyword is driven only at the package's own value (nothing is written into its parameters)."""
    if value is not None and value != PACKAGE_SCALE_INIT:
        raise NotRun(f"{PACKAGE}: {parameters} start at the package's own {PACKAGE_SCALE_INIT}; "
                     f"{keyword}={value!r} is not an option of the package")


def _flat_streams(x: torch.Tensor, n: int, width: int) -> tuple[torch.Tensor, tuple[int, ...]]:
    """Our [.., n, width] -> the package's [(P n), width]; returns (flat, leading shape)."""
    if x.dim() < 2 or tuple(x.shape[-2:]) != (n, width):
        raise ValueError(f"stream state must be [.., n, C] = [.., {n}, {width}], got {tuple(x.shape)}")
    lead = tuple(x.shape[:-2])
    return x.reshape(-1, width), lead


def _mix_coefficients(pkg: nn.Module, flat: torch.Tensor, n: int, P: int):
    """Run the package's width_connection; return (alpha [P, n, 1+n], beta [P, n]) as it computed them.

    alpha is the package's own tensor that multiplies the streams (the output of its second
    `split_fracs` call inside width_connection, recorded by a forward hook); beta is what
    width_connection returns for the depth connection.
    """
    with LastOutput(pkg.split_fracs) as seen:
        _, _, kwargs = pkg.width_connection(flat)
    alpha = seen.last("the mixing matrix alpha")
    if tuple(alpha.shape) != (P, 1, n, 1, n + 1):
        raise RuntimeError(f"cannot read the package's alpha: shape {tuple(alpha.shape)}, expected {(P, 1, n, 1, n + 1)}")
    beta = kwargs["beta"]
    if beta is None or tuple(beta.shape) != (P, 1, n, 1):
        raise RuntimeError(f"cannot read the package's beta: {None if beta is None else tuple(beta.shape)}")
    return alpha[:, 0, :, 0, :], beta[:, 0, :, 0]


class _StreamsMixin:
    """expand / readout / forward shared by both wrappers (the package's own functions do the work)."""

    n: int
    width: int
    pkg: nn.Module

    def _stream_fns(self, module_name: str) -> None:
        expand_fn, reduce_fn = load(module_name).get_expand_reduce_stream_functions(self.n)
        self.expand_fn, self.reduce_fn = expand_fn, reduce_fn  # einops Reduce modules, no parameters

    def expand(self, h: torch.Tensor) -> torch.Tensor:
        """n streams [.., n, width] of a hidden h [.., width], by the package's expand function (repeat)."""
        lead = tuple(h.shape[:-1])
        return self.expand_fn(h.reshape(-1, self.width)).reshape(*lead, self.n, self.width)

    def readout(self, x: torch.Tensor) -> torch.Tensor:
        """The hidden [.., width] of a stream state [.., n, width], by the package's reduce function (sum)."""
        flat, lead = _flat_streams(x, self.n, self.width)
        return self.reduce_fn(flat).reshape(*lead, self.width)

    def forward(self, x: torch.Tensor, body: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """The package's layer: branch input, body, depth connection; [.., n, width] in and out."""
        self._check_input(x)
        flat, lead = _flat_streams(x, self.n, self.width)
        branch_input, add_residual = self.pkg(flat)  # no branch given: the package returns (input, add_fn)
        y = body(branch_input.reshape(*lead, self.width))
        out = add_residual(y.reshape(-1, self.width))
        return out.reshape(*lead, self.n, self.width)

    def _check_input(self, x: torch.Tensor) -> None:
        pass


# ---------------------------------------------------------------- mHC


class _StaticAlphaFromBiases(nn.Module):
    """static_alpha [n, 1+n] = [b_pre | b_res^T]: the package's tensor from our two leaves."""

    def forward(self, b_pre: torch.Tensor, b_res: torch.Tensor) -> torch.Tensor:
        return torch.cat((b_pre.unsqueeze(-1), b_res.transpose(0, 1)), dim=-1)

    def right_inverse(self, static_alpha: torch.Tensor):
        return static_alpha[:, 0].clone(), static_alpha[:, 1:].transpose(0, 1).clone()


class MhcResidualAdapter(_StreamsMixin, nn.Module):
    """The package's mHC module behind our MhcResidual interface (see the module docstring for the map)."""

    phi_pre = refuse(PACKAGE, _PHI_REASON.format(name="phi_pre", cols="n"))
    phi_post = refuse(PACKAGE, _PHI_REASON.format(name="phi_post", cols="n"))
    phi_res = refuse(PACKAGE, _PHI_REASON.format(name="phi_res", cols="n^2"))

    def __init__(
        self,
        n: int,
        C: int,
        *,
        layout: str = "paper",
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        eps: float = PAPER_MHC_EPS,
        alpha_init: float | None = None,
        static_init: float | None = None,
        dynamic_init_std: float = 0.0,
        t_max: int = 20,
        sinkhorn_backward: str = "autograd",
        device: torch.device | str | None = None,
        layer_index: int = 0,
        log_domain_sinkhorn: bool = False,
    ) -> None:
        super().__init__()
        del generator  # the package draws nothing (its dynamic weights start at zero)
        if layout != "paper":
            raise NotRun(
                f"{PACKAGE}: mHC has only the paper's replicated layout (n copies of a C-wide state, the branch at "
                f"width C on H_pre x); layout {layout!r} is not a mode of the package"
            )
        require_float32(PACKAGE, "ManifoldConstrainedHyperConnections (width/depth connection)", dtype)
        require_route(PACKAGE, "mhc_residual's Sinkhorn", sinkhorn_backward)
        if eps != PAPER_MHC_EPS:
            raise NotRun(
                f"{PACKAGE}: mHC's norm has no epsilon to set (F.normalize clamps the L2 norm at 1e-12); eps={eps!r}"
            )
        if dynamic_init_std != 0:
            raise NotRun(
                f"{PACKAGE}: the package initialises its dynamic weights to zero and has no phi of Eq. 7's shape; "
                f"dynamic_init_std={dynamic_init_std!r} cannot be honoured"
            )
        if static_init is not None:
            raise NotRun(f"{PACKAGE}: mHC's static biases start at the package's own init (b_pre = e_k, b_res = I, "
                         f"b_post = 1), which has no static_init; static_init={static_init!r} is not an option of it")
        _require_package_scale(alpha_init, "alpha_init", "pre_branch_scale, residual_scale, h_post_scale")
        self.n, self.C, self.width, self.layout, self.t_max = n, C, C, "paper", t_max
        self.eps = eps  # accepted only at the paper's value, which the package does not use (see above)
        mod = load(MHC_MODULE)
        pkg = mod.ManifoldConstrainedHyperConnections(
            n, dim=C, layer_index=layer_index, sinkhorn_iters=t_max, log_domain_sinkhorn=log_domain_sinkhorn
        )
        if device is not None:
            pkg = pkg.to(device=device)
        parametrize.register_parametrization(pkg, "static_alpha", _StaticAlphaFromBiases())
        self.pkg = pkg
        self._stream_fns(MHC_MODULE)
        originals = pkg.parametrizations.static_alpha
        for ours, theirs in (
            ("b_pre", originals.original0),
            ("b_res", originals.original1),
            ("b_post", pkg.static_beta),
            ("alpha_pre", pkg.pre_branch_scale),
            ("alpha_post", pkg.h_post_scale),
            ("alpha_res", pkg.residual_scale),
        ):
            self.register_parameter(ours, theirs)  # the same Parameter object: one leaf, two names

    def coefficients(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(H_pre [.., n], H_post [.., n], H_res [.., n, n]) as the package computed them for x [.., n, C].

        H_res is the transpose of the package's alpha residual block: the matrix that multiplies
        the streams in Eq. 3's orientation (x_{l+1} = H_res x_l).
        """
        self._check_input(x)
        flat, lead = _flat_streams(x, self.n, self.C)
        P = flat.shape[0] // self.n
        alpha, beta = _mix_coefficients(self.pkg, flat, self.n, P)
        h_pre = alpha[..., 0]
        h_res = alpha[..., 1:].transpose(-1, -2)  # out[t] = sum_s A[s, t] x[s]  =>  H_res[t, s] = A[s, t]
        n = self.n
        return h_pre.reshape(*lead, n), beta.reshape(*lead, n), h_res.reshape(*lead, n, n)

    def _check_input(self, x: torch.Tensor) -> None:
        require_float32(PACKAGE, "ManifoldConstrainedHyperConnections (width/depth connection)", x.dtype)

    def extra_repr(self) -> str:
        return f"n={self.n}, C={self.C}, layout='paper', t_max={self.t_max} (package {PACKAGE})"


# ---------------------------------------------------------------- HC


class HyperConnectionAdapter(_StreamsMixin, nn.Module):
    """The package's HyperConnections behind our HyperConnection interface (map in the module docstring)."""

    layer_norm = refuse(
        PACKAGE,
        "HyperConnections normalises with RMSNorm (F.normalize * sqrt(d) * (1 + gamma), parameter pkg.norm.gamma), "
        "not a LayerNorm: there is no layer_norm weight or bias to map",
    )

    def __init__(
        self,
        n: int,
        d: int,
        layer_index: int,
        *,
        dynamic: bool = True,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        scale_init: float | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        del generator  # the package's init is deterministic (Eq. 14 with zero dynamic weights)
        if not dynamic:
            raise NotRun(
                f"{PACKAGE}: HyperConnections has no static mode; its dynamic weights (dynamic_alpha_fn, "
                "dynamic_beta_fn and their scales) always exist and train"
            )
        _require_package_scale(scale_init, "scale_init", "dynamic_alpha_scale, dynamic_beta_scale")
        self.n, self.d, self.width, self.layer_index, self.dynamic = n, d, d, layer_index, True
        pkg = load(HC_MODULE).HyperConnections(n, dim=d, layer_index=layer_index)
        self.pkg = pkg.to(dtype=dtype, device=device)  # every parameter is created at an exact 0 / 1 / 1e-2
        self._stream_fns(HC_MODULE)
        for ours, theirs in (
            ("static_beta", self.pkg.static_beta),
            ("static_alpha", self.pkg.static_alpha),
            ("dynamic_alpha_fn", self.pkg.dynamic_alpha_fn),
            ("dynamic_beta_fn", self.pkg.dynamic_beta_fn),
            ("alpha_scale", self.pkg.dynamic_alpha_scale),
            ("beta_scale", self.pkg.dynamic_beta_scale),
        ):
            self.register_parameter(ours, theirs)

    def connections(self, H: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(alpha [.., n, n+1], beta [.., n]) as the package computed them for H [.., n, d]."""
        flat, lead = _flat_streams(H, self.n, self.d)
        P = flat.shape[0] // self.n
        alpha, beta = _mix_coefficients(self.pkg, flat, self.n, P)
        return alpha.reshape(*lead, self.n, self.n + 1), beta.reshape(*lead, self.n)

    def extra_repr(self) -> str:
        return f"n={self.n}, d={self.d}, layer_index={self.layer_index} (package {PACKAGE})"


# ---------------------------------------------------------------- hidden in, hidden out


class StackAdapter(nn.Module):
    """The package's own composition of one layer per body, as its README writes it: `init, expand, reduce =
    get_init_and_expand_reduce_stream_functions(n)`, one `init(dim=d, branch=body)` per body, then
    reduce(layer_L(...layer_1(expand(h)))); with layer_index=k, the package's argument for Eq. 14's
    A_m = e_(k mod n) (the README omits it, and each layer then reads a stream drawn at random). The package
    folds the streams into the batch: h [.., d] is laid out as [1, P, d] and back. It ships no stack, so the
    loop and its refusal of an empty list of bodies are this adapter's; everything inside a layer, and what it
    does with a width, are the package's.
    """

    def __init__(self, module_name: str, n: int, d: int, bodies, *, dtype: torch.dtype, device):
        super().__init__()
        if len(bodies) == 0:
            raise ValueError(f"{PACKAGE} stack: needs at least one layer body (the adapter's loop, not the package's)")
        init, self.expand_fn, self.reduce_fn = load(module_name).get_init_and_expand_reduce_stream_functions(n)
        self.layers = nn.ModuleList(init(dim=d, branch=body, layer_index=k) for k, body in enumerate(bodies))
        self.layers.to(dtype=dtype, device=device)  # created at exact 0 / 1 / 1e-2 (and e_k, I): nothing rounds
        self.d = d

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        lead = tuple(h.shape[:-1])
        x = self.expand_fn(h.reshape(1, -1, self.d))
        for layer in self.layers:
            x = layer(x)
        return self.reduce_fn(x).reshape(*lead, self.d)


STACK_STREAMS = 4  # the expansion rate of the package's README examples


def hc_stack(d: int, bodies, *, dtype: torch.dtype = torch.float32, device=None) -> StackAdapter:
    """HyperConnections hidden in, hidden out (mechanism hc_stack); any float dtype (it computes in its own)."""
    return StackAdapter(HC_MODULE, STACK_STREAMS, d, bodies, dtype=dtype, device=device)


def mhc_stack(d: int, bodies, *, dtype: torch.dtype = torch.float32, device=None) -> StackAdapter:
    """ManifoldConstrainedHyperConnections hidden in, hidden out (mechanism mhc_stack); float32 only, as the
    package's Sinkhorn and norm compute in float32."""
    require_float32(PACKAGE, "ManifoldConstrainedHyperConnections", dtype)
    return StackAdapter(MHC_MODULE, STACK_STREAMS, d, bodies, dtype=dtype, device=device)


# ---------------------------------------------------------------- subjects


_DEVICES = ("cpu", "cuda")
_FLOAT32_AUTOGRAD = Capability(("float32",), _DEVICES, ("autograd",))


def _subject(log_domain: bool) -> Subject:
    def mhc_residual(*args, **kwargs) -> MhcResidualAdapter:
        if log_domain:
            kwargs["log_domain_sinkhorn"] = True
        return MhcResidualAdapter(*args, **kwargs)

    mhc_residual.__doc__ = MhcResidualAdapter.__doc__
    suffix = "-log" if log_domain else ""
    which = "log_domain_sinkhorn_knopps (log_domain_sinkhorn=True)" if log_domain else "sinkhorn_knopps (the default)"
    return Subject(
        name=f"{PACKAGE}{suffix}",
        description=f"PyPI hyper-connections: mHC, HC and Sinkhorn {which}; mHC and Sinkhorn float32 only",
        mechanisms={
            "sinkhorn": _sinkhorn(log_domain),
            "mhc_residual": mhc_residual,
            "hyper_connection": HyperConnectionAdapter,
            "hc_stack": hc_stack,
            "mhc_stack": mhc_stack,
        },
        capabilities={
            "sinkhorn": _FLOAT32_AUTOGRAD,  # both Sinkhorns call .float()
            "mhc_residual": _FLOAT32_AUTOGRAD,  # so does the width connection's norm
            "hyper_connection": Capability(("float32", "float64"), _DEVICES, ("autograd",)),  # computes in its dtype
            "hc_stack": Capability(("float32", "float64"), _DEVICES, ("autograd",)),
            "mhc_stack": Capability(("float32",), _DEVICES, ("autograd",), streams="replicated"),  # expand repeats, reduce sums
        },
        unavailable_reason=unavailable(PACKAGE, MHC_MODULE, HC_MODULE),
        modules={
            "sinkhorn": (MHC_MODULE,),
            "mhc_residual": (MHC_MODULE,),
            "hyper_connection": (HC_MODULE,),
            "hc_stack": (HC_MODULE,),
            "mhc_stack": (MHC_MODULE,),
        },
    )


SUBJECT = _subject(log_domain=False)
LOG_DOMAIN_SUBJECT = _subject(log_domain=True)
