"""Oracle of the weight-shared loop model (mechanism `loop_model`), one token at a time, at 60 digits.

The loop (attnres.placement_loop; fidelity.mechanisms.loop_model): h_0 = embed[token]; iteration k reads
h_ctx = h + e_k (e_k = iter_embed[k], added to every stream) and writes the residual with ONE arm:

    rezero   h = h_ctx + body(h_ctx) * residual_scale
    attnres  h = depth attention over [h_0, y_0, ..., y_k] with query attnres_queries[k], y_j = body(h_ctx_j)
    mhc      x = mHC Eq. 3 at x_l = h_ctx (sliced: the hidden cut into n slices; paper: n replicated streams)
    hc       H = HC Eq. 5 (static, or DHC Eq. 10-13) at H_ctx, n replicated streams from h_0
    logits_k = readout_w hidden_k + readout_b      (hidden: the state; the streams summed for paper mHC and HC)

with body(x) = W2 act(W1 x + b1) + b2 (act = tanh, or GELU's erf form x/2 (1 + erf(x / sqrt 2))).

Every arm's residual write is computed by the existing oracles, composed:
- attnres: `depth_attention.depth_attention` (Eq. 2-4, the score convention and eps of the config);
- mhc: `mhc.eq7_coefficients` (Eq. 7/8, RMSNorm eps, H_res by `sinkhorn.sinkhorn` at t_max), then
  `mhc.eq3_sliced` / `mhc.eq3_paper` (Eq. 3);
- hc: `hc.layer_norm_rows` (Eq. 10) and `hc.hc_layer` (Eq. 3-5); the dynamic coefficients are Eq. 11-13 as
  `hc.dhc_coefficients` writes them, with the LayerNorm's affine weight and bias applied to H_bar
  (torch.nn.LayerNorm's elementwise affine, which the module carries as parameters).
The sympy oracles are called on exact rationals (the current 60-digit binary values, exactly) and their results
evaluated at 60 digits, so each step rounds by ~1e-60, far below the 40 digits a fixture keeps.
The body and the readout are plain mpmath arithmetic.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Sequence

import mpmath
import sympy

from . import depth_attention as da
from . import hc as hc_oracle
from . import mhc as mhc_oracle
from ._precision import exact, mp, precision

HC_LAYER_NORM_EPS = sympy.Rational(1, 100000)
"""The HC arm's LayerNorm eps: torch.nn.LayerNorm's default 1e-5, which HyperConnection builds (tier c)."""

ACTIVATIONS = ("tanh", "gelu")


def to_rational(x) -> sympy.Rational:
    """An mpf (or anything `exact` reads) as the exact rational it holds."""
    if isinstance(x, mpmath.mpf):
        if not mpmath.isfinite(x):
            raise ValueError(f"{x} is not a finite number")
        sign, man, e, _ = x._mpf_
        return (-1) ** sign * sympy.Integer(man) * sympy.Integer(2) ** e
    return exact(x)


def _q(value):
    if isinstance(value, (list, tuple)):
        return [_q(v) for v in value]
    return to_rational(value)


def _mp(value):
    if isinstance(value, (list, tuple)):
        return [_mp(v) for v in value]
    return mp(value)


def _act(x, activation: str):
    if activation == "tanh":
        return mpmath.tanh(x)
    if activation == "gelu":
        return x / 2 * (1 + mpmath.erf(x / mpmath.sqrt(2)))
    raise ValueError(f"unknown activation {activation!r}; expected one of {ACTIVATIONS}")


def body(x: Sequence, p: Mapping, activation: str) -> list:
    """W2 act(W1 x + b1) + b2 (mpf in, mpf out)."""
    u = [mpmath.fsum(w * xi for w, xi in zip(row, x)) + b for row, b in zip(p["body_w1"], p["body_b1"])]
    a = [_act(v, activation) for v in u]
    return [mpmath.fsum(w * ai for w, ai in zip(row, a)) + b for row, b in zip(p["body_w2"], p["body_b2"])]


def _readout(hidden: Sequence, p: Mapping) -> list:
    return [mpmath.fsum(w * h for w, h in zip(row, hidden)) + b for row, b in zip(p["readout_w"], p["readout_b"])]


def _mhc_write(ctx_streams, p: Mapping, cfg: Mapping, run_body):
    """mHC Eq. 7/8 then Eq. 3 at x_l = ctx_streams (n x C, mpf); returns the next stream state (n x C, mpf)."""
    names = ("phi_pre", "phi_post", "phi_res", "alpha_pre", "alpha_post", "alpha_res", "b_pre", "b_post", "b_res")
    c = mhc_oracle.eq7_coefficients_mp(ctx_streams, {k: p[f"mhc.{k}"] for k in names}, exact(cfg["mhc_eps"]),
                                       int(cfg["sinkhorn_t_max"]))
    H_pre, H_post, H_res = c["H_pre"], c["H_post"], c["H_res"]
    n = len(ctx_streams)
    if cfg["mhc_layout"] == "sliced":
        flat = [v for row in ctx_streams for v in row]
        y = run_body(flat)
        C = len(ctx_streams[0])
        y_streams = [y[j * C:(j + 1) * C] for j in range(n)]
        return mhc_oracle.eq3_sliced(ctx_streams, y_streams, H_res, H_post)
    u = [mpmath.fsum(H_pre[i] * ctx_streams[i][c] for i in range(n)) for c in range(len(ctx_streams[0]))]
    return mhc_oracle.eq3_paper(ctx_streams, run_body(u), H_pre, H_res, H_post)["out"]


def _hc_write(ctx_streams, p: Mapping, cfg: Mapping, run_body):
    """HC Eq. 3-5 (static) or DHC Eq. 10-13 at H = ctx_streams (n x d, mpf); returns H^ (n x d, mpf)."""
    n = len(ctx_streams)
    static_alpha = p["hc.static_alpha"]
    A_m = [[row[0]] for row in static_alpha]
    A_r = [list(row[1:]) for row in static_alpha]
    B = [list(p["hc.static_beta"])]
    if cfg["hc_dynamic"]:
        Hbar = hc_oracle.layer_norm_rows_mp(ctx_streams, HC_LAYER_NORM_EPS)
        Hbar = [[v * w + b for v, w, b in zip(row, p["hc.layer_norm.weight"], p["hc.layer_norm.bias"])]
                for row in Hbar]  # torch.nn.LayerNorm's affine on hc.eq10's H_bar
        W = p["hc.dynamic_alpha_fn"]  # [d, n+1] = [W_m | W_r]
        s_a, s_b = p["hc.alpha_scale"], p["hc.beta_scale"]
        dyn = [[mpmath.tanh(mpmath.fsum(r[i] * W[i][j] for i in range(len(r)))) for j in range(n + 1)] for r in Hbar]
        A_m = [[s_a * dyn[s][0] + A_m[s][0]] for s in range(n)]  # hc.eq12
        A_r = [[s_a * dyn[s][1 + j] + A_r[s][j] for j in range(n)] for s in range(n)]  # hc.eq13
        beta_dyn = [mpmath.tanh(mpmath.fsum(ri * wi for ri, wi in zip(r, p["hc.dynamic_beta_fn"]))) for r in Hbar]
        B = [[s_b * beta_dyn[s] + B[0][s] for s in range(n)]]  # hc.eq11

    def T(h_row):
        return _fractions(run_body(_from_fractions(h_row)))

    out = hc_oracle.hc_layer_fractions(_fractions(ctx_streams), _fractions(B), _fractions(A_m), _fractions(A_r), T)
    return _from_fractions(out)


def _fractions(value):
    """Nested mpf as the exact Fractions they hold."""
    if isinstance(value, (list, tuple)):
        return [_fractions(v) for v in value]
    sign, man, e, _ = value._mpf_
    if not mpmath.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    m = -man if sign else man
    return Fraction(m * 2 ** e) if e >= 0 else Fraction(m, 2 ** -e)


def _from_fractions(value):
    """Nested Fractions as mpf at the current precision: mpf(p) / q, the rounding `mp` gives a sympy Rational."""
    if isinstance(value, (list, tuple)):
        return [_from_fractions(v) for v in value]
    return mpmath.mpf(value.numerator) / value.denominator


def loop_logits(token: int, params: Mapping, cfg: Mapping) -> list[list]:
    """The T per-iteration logits (vocab mpf each) of the loop model on one token.

    `params`: name -> nested values (model.named_parameters() names); `cfg`: the LoopConfig fields (mhc_eps,
    attnres_eps exact decimals or rationals)."""
    with precision():
        p = {k: _mp(v) for k, v in params.items()}
        act, arm = cfg["activation"], cfg["arm"]

        def run_body(x):
            return body(x, p, act)

        h0 = list(p["embed"][token])
        n_mhc, n_hc = int(cfg["mhc_streams"]), int(cfg["hc_streams"])
        if arm == "hc":
            state = [list(h0) for _ in range(n_hc)]
        elif arm == "mhc" and cfg["mhc_layout"] == "paper":
            state = [list(h0) for _ in range(n_mhc)]
        else:
            state = list(h0)
        sources = [h0]
        logits = []
        for k in range(int(cfg["T"])):
            e = p["iter_embed"][k]
            multi = isinstance(state[0], list)
            ctx = [[v + ek for v, ek in zip(row, e)] for row in state] if multi else [v + ek for v, ek in zip(state, e)]
            if arm == "rezero":
                y = run_body(ctx)
                state = [c + yi * p["residual_scale"] for c, yi in zip(ctx, y)]
                hidden = state
            elif arm == "attnres":
                sources.append(run_body(ctx))
                state = da.depth_attention_mp(sources, p["attnres_queries"][k], exact(cfg["attnres_eps"]),
                                              cfg["score_convention"])
                hidden = state
            elif arm == "mhc":
                if cfg["mhc_layout"] == "sliced":
                    C = len(ctx) // n_mhc
                    x = [ctx[j * C:(j + 1) * C] for j in range(n_mhc)]
                    out = _mhc_write(x, p, cfg, run_body)
                    state = [v for row in out for v in row]
                    hidden = state
                else:
                    state = _mhc_write(ctx, p, cfg, run_body)
                    hidden = [mpmath.fsum(col) for col in zip(*state)]
            elif arm == "hc":
                state = _hc_write(ctx, p, cfg, run_body)
                hidden = [mpmath.fsum(col) for col in zip(*state)]
            else:
                raise ValueError(f"unknown arm {arm!r}")
            logits.append(_readout(hidden, p))
        return logits
