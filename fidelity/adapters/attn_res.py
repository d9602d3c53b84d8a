"""Adapter: the `attn-res` package (kyegomez, PyPI `attn-res`, module `attn_res`) as a subject.

Mechanisms:
    depth_attention  attn_res.main.AttnResOperator: one pseudo-query over stacked sources
    block_attnres    attn_res.main.AttnResTransformer's own schedule, `_forward_block_attnres`
                     (num_blocks < L) or `_forward_full_attnres` (num_blocks == L), driven with our
                     sublayers in place of its attention / SwiGLU sublayers

What the package computes (read from its source, 0.1.0), in our notation:

AttnResOperator(d, eps): K = RMSNormNoWeight(V) = V.float() * rsqrt(mean(V.float()^2, -1) + eps),
cast back to V's dtype; s_i = w . K_i (einsum "d, n b t d -> n b t"); alpha = softmax over the
source axis (dim 0); h = sum_i alpha_i V_i. That is Eq. 2-4 under the "paper" convention (mean
norm, eps inside the root, no temperature, no gain). The key norm computes in float32 for any
input, so only float32 runs here. Sources must be 4-D [N, B, T, d]: the adapter reshapes our
[L, ..., d] to [L, 1, P, d] and back. alpha is the tensor the operator's own softmax returned
(recorded by a TorchFunctionMode that changes nothing); the pseudo-query is our `query`, passed
with torch.func.functional_call so gradients reach the caller's tensor.

Block schedule (`_forward_block_attnres`): blocks = [x]; for sublayer i (0-based) the sources are
blocks + [partial] (partial = the running sum of the current block, absent at i = 0); AFTER the
sublayer ran, `if i > 0 and i % block_size == 0` the partial joins `blocks` and restarts; the
block size is cfg.block_size = n_layers // n_blocks (FLOOR, where Eq. 5's blocks are
ceil(L/N) with the remainder last); the returned output is the plain SUM of the final sources
(blocks + last partial), not an attention. Each package sublayer (TransformerSubLayer) computes
h = attn_res(sources), then f(PreNorm(h)); the adapter keeps TransformerSubLayer.forward and the
package's AttnResOperator, replaces the PreNorm by identity and the attention / SwiGLU function
`fn` by our sublayer f_l (the paper's f_l receives h_l itself), and ignores RoPE and the mask
(our sublayers do not take them). The input h1 [..., d] is laid out as x [1, P, d]. The model's
token embedding, output norm and LM head, which the schedule never reads, are dropped.

Parameter map of BlockAttnResAdapter:
    queries [L, d]  -> layers[l].attn_res.pseudo_query, one per sublayer; a leaf of the wrapper,
                       initialised FROM the package's own init (its _init_weights zeroes them) and
                       handed to each package operator for the duration of a forward
    output_query    -> none: the package's output is the sum of the final sources. The wrapper has
                       no such parameter (a gate that needs it reports it as not run).

Refused (NotRun, reported as not run): any dtype but float32; the "l2" and "l2_sqrt_d" conventions; a
learned gain (the key norm has no weight); a "manual" backward; the "two_phase" mode (the package
ships phase-1 and merge helpers, `two_phase_block_attnres_inference` and `online_softmax_merge`,
but no schedule that uses them); return_trace (the schedule keeps its sources in local variables).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from fidelity.subjects.subject import Capability, NotRun, Subject

from ._common import Observe, load, require_float32, require_route, unavailable

PACKAGE = "attn-res"
MAIN = "attn_res.main"
_SOFTMAXES = (F.softmax, torch.softmax, torch.Tensor.softmax)


def _require_paper(convention: str) -> None:
    if convention != "paper":
        raise NotRun(
            f"{PACKAGE}: AttnResOperator scores q . RMSNorm(v) only (the 'paper' convention); {convention!r} is not "
            "a mode of the package"
        )


# ---------------------------------------------------------------- depth attention


def depth_attend(
    sources: torch.Tensor,
    query: torch.Tensor,
    *,
    convention: str = "paper",
    eps: float = 1e-6,
    gain: torch.Tensor | None = None,
    backward: str = "autograd",
) -> tuple[torch.Tensor, torch.Tensor]:
    """(h [..., d], alpha [L, ...]) by attn_res' AttnResOperator(d, eps) with pseudo_query = query."""
    require_route(PACKAGE, "depth_attention", backward)
    _require_paper(convention)
    if gain is not None:
        raise NotRun(f"{PACKAGE}: the key norm (RMSNormNoWeight) has no gain; gain must be None")
    require_float32(PACKAGE, "RMSNormNoWeight (the key norm)", sources.dtype, query.dtype)
    if sources.dim() < 2:
        raise ValueError(f"sources must be [L, ..., d], got shape {tuple(sources.shape)}")
    L, d, lead = sources.shape[0], sources.shape[-1], tuple(sources.shape[1:-1])
    op = load(MAIN).AttnResOperator(d, eps=eps).to(device=sources.device)
    with Observe(*_SOFTMAXES) as seen:
        h = torch.func.functional_call(op, {"pseudo_query": query}, (sources.reshape(L, 1, -1, d),))
    alpha = seen.single("alpha (the operator's softmax over sources)")
    return h.reshape(*lead, d), alpha.reshape(L, *lead)


# ---------------------------------------------------------------- Block AttnRes


class _OurSublayer(nn.Module):
    """Stands in for a package sublayer's `fn`: calls our f_l on h_l in the caller's layout."""

    def __init__(self, f: Callable[[torch.Tensor], torch.Tensor], owner: "BlockAttnResAdapter") -> None:
        super().__init__()
        self.f = f  # an nn.Module sublayer is registered here (and so in the wrapper)
        self._owner = [owner]  # a list, so the wrapper is not registered as our child

    def forward(self, h: torch.Tensor, *_rope_and_mask) -> torch.Tensor:
        lead = self._owner[0]._lead
        y = self.f(h.reshape(*lead, h.shape[-1]))
        return y.reshape(h.shape)


class BlockAttnResAdapter(nn.Module):
    """The package's Block / Full AttnRes schedule behind our BlockAttnRes interface."""

    def __init__(
        self,
        sublayers: Sequence[Callable[[torch.Tensor], torch.Tensor]],
        d: int,
        num_blocks: int,
        *,
        convention: str = "paper",
        eps: float = 1e-6,
        learned_gain: bool = False,
        mode: str = "direct",
        backward: str = "autograd",
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        _require_paper(convention)
        if learned_gain:
            raise NotRun(f"{PACKAGE}: the AttnRes key norm (RMSNormNoWeight) has no learned gain")
        require_route(PACKAGE, "block_attnres", backward)
        require_float32(PACKAGE, "RMSNormNoWeight (the key norm)", dtype)
        self._refuse_mode(mode)
        main = load(MAIN)
        L = len(sublayers)
        self.d, self.L, self.num_blocks, self.mode, self.eps = d, L, num_blocks, mode, eps
        full = num_blocks == L
        cfg = main.TransformerConfig(
            d_model=d, n_layers=L, n_heads=1, n_kv_heads=1, vocab_size=1, max_seq_len=1, dropout=0.0,
            attn_res_mode=main.AttnResMode.FULL if full else main.AttnResMode.BLOCK, n_blocks=num_blocks, eps=eps,
        )
        with torch.random.fork_rng(devices=[]):  # the package's own init draws from the global RNG; keep it
            model = main.AttnResTransformer(cfg)
        self._schedule = "_forward_full_attnres" if full else "_forward_block_attnres"
        # The schedule reads only cfg and layers: the embedding, the output norm and the (tied) LM head
        # would be parameters no gradient can reach, so they are dropped from this instance.
        del model.lm_head, model.token_emb, model.out_norm
        for l, layer in enumerate(model.layers):
            layer.norm = nn.Identity()  # the PreNorm belongs to f_l, which is ours
            layer.fn = _OurSublayer(sublayers[l], self)
        # Our leaf `queries`, initialised from the package's init, handed to each operator per forward.
        init = torch.stack([layer.attn_res.pseudo_query.detach().clone() for layer in model.layers])
        for layer in model.layers:
            del layer.attn_res.pseudo_query
        self.model = model.to(device=device)
        self.queries = nn.Parameter(init.to(device=device))
        self._lead: tuple[int, ...] = ()

    def _refuse_mode(self, mode: str) -> None:
        if mode == "two_phase":
            raise NotRun(
                f"{PACKAGE}: no two-phase schedule (two_phase_block_attnres_inference and online_softmax_merge "
                "are helpers no schedule of the package calls); only the direct form runs"
            )
        if mode != "direct":
            raise ValueError(f"unknown mode {mode!r}; expected 'direct' or 'two_phase'")

    @property
    def block_size(self) -> int:
        """The package's block size, n_layers // n_blocks (Eq. 5's is ceil(L / N))."""
        return self.model.cfg.block_size

    def forward(self, h1: torch.Tensor, *, mode: str | None = None, return_trace: bool = False) -> torch.Tensor:
        self._refuse_mode(self.mode if mode is None else mode)
        if return_trace:
            raise NotRun(f"{PACKAGE}: the schedule keeps its sources in local variables; no trace")
        require_float32(PACKAGE, "RMSNormNoWeight (the key norm)", h1.dtype)
        d = self.d
        self._lead = tuple(h1.shape[:-1])
        x = h1.reshape(1, -1, d)
        ops = [layer.attn_res for layer in self.model.layers]
        try:
            for l, op in enumerate(ops):
                op.pseudo_query = self.queries[l]  # a plain attribute for this call (w_l = queries[l])
            out = getattr(self.model, self._schedule)(x, self.model.rope_freqs, None)
        finally:
            for op in ops:
                op.__dict__.pop("pseudo_query", None)
        return out.reshape(*self._lead, d)

    def extra_repr(self) -> str:
        return (f"d={self.d}, L={self.L}, num_blocks={self.num_blocks}, package block_size={self.block_size} "
                f"(Eq. 5: {math.ceil(self.L / self.num_blocks)}), schedule={self._schedule} (package {PACKAGE})")


SUBJECT = Subject(
    name=PACKAGE,
    description="PyPI attn-res: AttnResOperator and its Block/Full schedule; paper convention, float32, direct only",
    mechanisms={
        "depth_attention": depth_attend,
        "block_attnres": BlockAttnResAdapter,
    },
    capabilities={  # the key norm computes in float32 (RMSNormNoWeight calls .float()) and has no gain
        "depth_attention": Capability(("float32",), ("cpu", "cuda"), ("autograd",), lacks=("gain",)),
        "block_attnres": Capability(("float32",), ("cpu", "cuda"), ("autograd",), keeps_state={
            "*._lead": "this adapter's: the leading shape of the call under way, set as each call starts and read "
                       "only by its own sublayers (the package's layers see a flattened hidden)"}),
    },
    unavailable_reason=unavailable(PACKAGE, MAIN),
    modules={
        "depth_attention": (MAIN,),
        "block_attnres": (MAIN,),
    },
)
