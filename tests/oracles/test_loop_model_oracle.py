"""The loop model's oracle (fidelity.oracles.loop_model) against what each arm must reduce to at known points.

- rezero: h_{k+1} = h_ctx + s body(h_ctx), written out by hand here;
- attnres at zero queries: the state after iteration 0 is (h_0 + y_0)/2, after iteration 1 (h_0 + y_0 + y_1)/3
  (attnres.placement_loop);
- static HC at the Eq. 14 init from replicated streams: every stream is ReZero's state at s = 1, so the hidden
  is n times it (hc.replicated_equivalence);
- mHC, sliced, with alpha = 0, b_post = 0 and b_res = [[3, 1], [1, 3]]: H_post = 2 sigma(0) = 1 and, exp(b_res)
  being symmetric with equal row sums, H_res = exp(b_res) with its rows normalised, reached at the first step
  (sinkhorn.constant_diagonal's reason), so x_{k+1} = H_res x_ctx + y.
Small sizes (vocab 2, d 2, T 2, hidden 2) keep the mpmath runs short.
"""
import mpmath
import sympy

from fidelity.oracles import loop_model as lo
from fidelity.oracles._precision import mp, precision

R = sympy.Rational
CFG = dict(vocab=2, d=2, T=2, arm="rezero", mhc_streams=2, mhc_layout="sliced", hc_streams=2, hc_dynamic=False,
           score_convention="paper", attnres_eps=R(1, 10**6), mhc_eps=R(1, 10**20), mhc_dynamic_init_std=0,
           sinkhorn_t_max=20, hidden_mult=1, activation="tanh")
P = {
    "embed": [[R(1, 2), R(-1, 4)], [1, 2]], "iter_embed": [[R(1, 8), 0], [0, R(-1, 8)]],
    "body_w1": [[1, R(1, 2)], [R(-1, 2), 1]], "body_b1": [R(1, 4), 0],
    "body_w2": [[R(1, 2), 0], [R(1, 4), -1]], "body_b2": [0, R(1, 8)],
    "readout_w": [[1, 0], [R(1, 2), R(1, 2)]], "readout_b": [0, R(1, 4)],
    "residual_scale": 1, "attnres_queries": [[0, 0], [0, 0]],
    "mhc.phi_pre": [[0, 0], [0, 0]], "mhc.phi_post": [[0, 0], [0, 0]], "mhc.phi_res": [[0] * 4, [0] * 4],
    "mhc.alpha_pre": 0, "mhc.alpha_post": 0, "mhc.alpha_res": 0, "mhc.b_pre": [10, 10], "mhc.b_post": [0, 0],
    "mhc.b_res": [[3, 1], [1, 3]], "hc.static_beta": [1, 1], "hc.static_alpha": [[1, 1, 0], [0, 0, 1]],
}


def _body(x):
    u = [mpmath.tanh(sum(mp(w) * xi for w, xi in zip(row, x)) + mp(b)) for row, b in zip(P["body_w1"], P["body_b1"])]
    return [sum(mp(w) * ui for w, ui in zip(row, u)) + mp(b) for row, b in zip(P["body_w2"], P["body_b2"])]


def _readout(h):
    return [sum(mp(w) * hi for w, hi in zip(row, h)) + mp(b) for row, b in zip(P["readout_w"], P["readout_b"])]


def _close(a, b, digits=40):
    with precision():
        return all(abs(mp(x) - mp(y)) <= mpmath.mpf(10) ** -digits * max(1, abs(mp(y))) for x, y in zip(a, b))


def _rezero_states(token, s=1):
    with precision():
        h = [mp(v) for v in P["embed"][token]]
        states = []
        for k in range(2):
            ctx = [v + mp(e) for v, e in zip(h, P["iter_embed"][k])]
            h = [c + mp(s) * y for c, y in zip(ctx, _body(ctx))]
            states.append(h)
        return states


def test_rezero_arm_is_h_ctx_plus_s_body():
    for s in (1, R(3, 4)):
        got = lo.loop_logits(1, dict(P, residual_scale=s), dict(CFG, arm="rezero"))
        with precision():
            want = [_readout(h) for h in _rezero_states(1, s)]
        assert all(_close(g, w) for g, w in zip(got, want))


def test_attnres_arm_at_zero_queries_is_the_equal_weight_average():
    got = lo.loop_logits(0, P, dict(CFG, arm="attnres"))
    with precision():
        h0 = [mp(v) for v in P["embed"][0]]
        ctx0 = [a + mp(e) for a, e in zip(h0, P["iter_embed"][0])]
        y0 = _body(ctx0)
        s1 = [(a + b) / 2 for a, b in zip(h0, y0)]
        ctx1 = [a + mp(e) for a, e in zip(s1, P["iter_embed"][1])]
        y1 = _body(ctx1)
        s2 = [(a + b + c) / 3 for a, b, c in zip(h0, y0, y1)]
        want = [_readout(s1), _readout(s2)]
    assert all(_close(g, w) for g, w in zip(got, want))


def test_static_hc_at_the_eq14_init_reads_out_n_times_rezero_at_scale_one():
    got = lo.loop_logits(1, P, dict(CFG, arm="hc", hc_dynamic=False))
    with precision():
        want = [_readout([2 * v for v in h]) for h in _rezero_states(1)]
    assert all(_close(g, w) for g, w in zip(got, want))


def test_sliced_mhc_with_constant_diagonal_bias_mixes_by_the_one_step_sinkhorn_limit():
    got = lo.loop_logits(0, P, dict(CFG, arm="mhc"))
    with precision():
        e3 = mpmath.e ** 3
        diag, off = e3 / (e3 + mpmath.e), mpmath.e / (e3 + mpmath.e)  # exp(b_res) rows normalised: doubly stochastic
        h = [mp(v) for v in P["embed"][0]]  # sliced, C = 1: stream j is h[j]
        want = []
        for k in range(2):
            ctx = [v + mp(e) for v, e in zip(h, P["iter_embed"][k])]
            y = _body(ctx)
            h = [diag * ctx[0] + off * ctx[1] + y[0], off * ctx[0] + diag * ctx[1] + y[1]]
            want.append(_readout(h))
    assert all(_close(g, w) for g, w in zip(got, want))


def test_the_oracle_reads_every_parameter_it_is_given_for_the_dynamic_hc_arm():
    dyn = dict(P, **{"hc.dynamic_alpha_fn": [[R(1, 2), 0, R(-1, 4)], [0, R(1, 4), R(1, 2)]],
                     "hc.dynamic_beta_fn": [R(1, 4), R(-1, 2)], "hc.alpha_scale": R(1, 2), "hc.beta_scale": R(1, 2),
                     "hc.layer_norm.weight": [1, R(3, 4)], "hc.layer_norm.bias": [R(1, 8), 0]})
    base = lo.loop_logits(1, dyn, dict(CFG, arm="hc", hc_dynamic=True))
    for name in ("hc.alpha_scale", "hc.beta_scale", "hc.layer_norm.bias"):
        moved = lo.loop_logits(1, dict(dyn, **{name: (R(1, 4) if "scale" in name else [0, R(1, 4)])}),
                               dict(CFG, arm="hc", hc_dynamic=True))
        assert not _close(base[-1], moved[-1], digits=6), name
