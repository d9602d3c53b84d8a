"""The whole-stack oracle (block_attnres.stack_forward, depth_mix) against the independent pieces it is made of.

- depth_mix equals the exact sympy depth attention (fidelity.oracles.depth_attention) under every convention;
- at zero queries every h_l is the mean of its Eq. 6 sources (source_sets) and h_out the mean of [b_0 .. b_N];
- N = L (Full AttnRes) is Eq. 1 itself: h_l = softmax-weighted sum over [h1, f_1, ..., f_{l-1}];
- each block's h_l equal Algorithm 1's two-phase computation (two_phase_block) given the block's outputs.
"""
import mpmath
import pytest

from fidelity.oracles import block_attnres as ba
from fidelity.oracles import cases
from fidelity.oracles import depth_attention as da
from fidelity.oracles._precision import mp, precision

TOL = mpmath.mpf("1e-45")  # the working precision is 60 digits; every comparison is far inside it

W = [[["1/2", "-1/4", 0, "1/8"], ["1/4", "1/2", "-1/2", 0], [0, "1/8", "1/2", "-1/4"], ["-1/8", 0, "1/4", "1/2"]],
     [["-1/2", "1/4", "1/8", 0], [0, "-1/4", "1/2", "1/8"], ["1/4", 0, "-1/2", "1/2"], ["1/8", "1/2", 0, "-1/4"]],
     [["1/4", 0, "1/2", "-1/8"], ["1/2", "1/4", 0, "1/4"], ["-1/4", "1/2", "1/8", 0], [0, "-1/8", "1/4", "1/2"]],
     [["1/8", "1/4", "-1/4", "1/2"], ["-1/2", 0, "1/4", "1/8"], ["1/4", "1/8", 0, "-1/2"], ["1/2", "-1/4", "1/8", 0]],
     [[0, "1/2", "1/4", "-1/4"], ["1/8", 0, "-1/2", "1/4"], ["1/2", "-1/8", 0, "1/4"], ["-1/4", "1/4", "1/2", 0]]]
C = [[1, -2, "1/2", 0], [0, 1, -1, 2], ["-1/2", 0, 1, 1], [2, "1/4", 0, -1], [-1, 1, "1/2", "1/4"]]
H1 = [1, "-1/2", 2, "1/4"]
Q = [["1/2", -1, "1/4", 1], [2, 1, "-1/2", 0], [1, -1, 2, "1/2"], ["-1/2", "1/2", 1, -1], [1, 0, "-1/4", 2]]
OQ = ["1/4", -1, "1/2", 1]
G = [[1, 2, "1/2", 1], ["1/2", 1, 1, 2], [1, 1, 2, "1/2"], [2, "1/2", 1, 1], [1, "1/2", 2, 1]]


def _subs():
    return [ba.affine(W[l], C[l]) for l in range(5)]


def _close(a, b):
    with precision():
        assert max(abs(mp(x) - mp(y)) for x, y in zip(a, b)) < TOL, (a, b)


@pytest.mark.parametrize("convention", da.CONVENTIONS)
def test_depth_mix_is_the_exact_depth_attention(convention):
    c = cases.ATTNRES_GENERAL
    exact = da.depth_attention(c["sources"], c["query"], c["eps"], convention, c["gain"])
    mixed = ba.depth_mix(c["sources"], c["query"], c["eps"], convention, c["gain"])
    _close(mixed["alpha"], exact["alpha"])
    _close(mixed["h"], exact["h"])


@pytest.mark.parametrize("L,N", ba.LAYOUTS)
def test_at_zero_queries_every_input_is_the_mean_of_its_eq6_sources(L, N):
    d = 4
    subs = [ba.affine(W[l % 5], C[l % 5]) for l in range(L)]
    res = ba.stack_forward(H1, subs, N, [[0] * d] * L, [0] * d, "1e-6")
    y = {f"f{l + 1}": res["y"][l] for l in range(L)}
    y["h1"] = H1
    with precision():
        for entry in ba.source_sets(L, N):
            rows = [[mpmath.fsum(mp(y[t][j]) for t in entry["composition"][name]) for j in range(d)]
                    for name in entry["sources"]]
            _close(res["h"][entry["layer"] - 1], [mpmath.fsum(r[j] for r in rows) / len(rows) for j in range(d)])
        blocks = [[mp(x) for x in H1]] + res["blocks"]
        _close(res["out"], [mpmath.fsum(b[j] for b in blocks) / len(blocks) for j in range(d)])


@pytest.mark.parametrize("convention", da.CONVENTIONS)
def test_full_attnres_is_eq1(convention):
    res = ba.stack_forward(H1, _subs(), 5, Q, OQ, "1e-6", convention, G, G[0])
    for l in range(5):
        sources = [H1] + res["y"][:l]
        _close(res["h"][l], ba.depth_mix(sources, Q[l], "1e-6", convention, G[l])["h"])
    _close(res["out"], ba.depth_mix([H1] + res["y"], OQ, "1e-6", convention, G[0])["h"])


def test_each_block_is_algorithm_1_given_its_outputs():
    res = ba.stack_forward(H1, _subs(), 2, Q, OQ, "1e-6")  # blocks [1, 2, 3], [4, 5]
    blocks = ba.block_partition(5, 2)
    inter = [H1]
    for members in blocks:
        idx = [l - 1 for l in members]
        steps = ba.two_phase_block(inter, [res["y"][i] for i in idx], [Q[i] for i in idx], "1e-6")
        for step, i in zip(steps, idx):
            _close(step["h"], res["h"][i])
        with precision():
            inter = inter + [[mpmath.fsum(res["y"][i][j] for i in idx) for j in range(4)]]
