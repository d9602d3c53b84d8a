"""Gates: Hyper-Connections (arXiv:2409.19606, Eqs. 1-5, 8-14) against the oracle's fixtures.

Layer bodies are LINEAR and given by the fixture (T(h) = h W), and record their input, so the
connection is under test and its layer input h_0 = A_m^T H is asserted too.

The two init gates (gate_class init_through_module) build each module through the subject's factory
and use the parameters it created: they write nothing, so an init that is not Eq. 14's shows. Sub-cases
that can fail or be refused on their own (the replicated and the distinct-rows input; each quantity of
a DHC layer; the static module a subject may not have) are separate instances.

Tolerances: the static fixtures are dyadic rationals (W entries in {0, +-1/4, +-1/2, +-1, 2}),
so static HC is exact in both dtypes; 16 eps allows a reordered sum, with floor 1 because the
fixtures' entries are O(1) numbers with exact zeros among them (a zero's relative error would
otherwise read |got| / 1e-30). The dynamic layer adds a LayerNorm (mean, variance, rsqrt), tanh
and two small matmuls on O(1) numbers: 64 eps.
"""
import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import expected, fixture, value

DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
STATIC_TOL = Tolerance(eps_multiple=16, floor=1.0)     # exact dyadic arithmetic; 16 eps for reordering; O(1) scale
DYNAMIC_TOL = Tolerance(eps_multiple=64, floor=1e-30)  # LayerNorm + tanh + matmuls on O(1) numbers
# out = B(H)^T T(h_0) + H' adds O(1) terms; out[0, 0] = 0.0042 is a cancellation of such terms, so its
# rounding is relative to their scale 1, not to 0.0042: floor 1.
DYNAMIC_OUT_TOL = Tolerance(eps_multiple=64, floor=1.0)


class LinearBody:
    """T(h) = h W (row vector times matrix), remembering the h it was given."""

    def __init__(self, W: torch.Tensor):
        self.W = W
        self.inputs: list[torch.Tensor] = []

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        self.inputs.append(h)
        return h @ self.W


def _hc(subject, n, d, k, dynamic, dtype, device):
    return subject.get("hyper_connection")(n, d, k, dynamic=dynamic, dtype=dtype, device=device)


def _run_layers(subject, H, Ws, n, dynamic, dtype, device):
    """Apply L layers k = 0..L-1 at their Eq. 14 init; return (states [H^0..H^L], the last module)."""
    states, module = [H], None
    for k, W in enumerate(Ws):
        module = _hc(subject, n, H.shape[-1], k, dynamic, dtype, device)
        states.append(module(states[-1], LinearBody(W)))
    return states, module


CASES_EQ14 = ["replicated", "distinct"]
QUANTITIES_ZERO = ["out", "static_out", "out_vs_static", "B", "A_m", "A_r"]
# What each DHC quantity checks (its findings are listed under these alone): out the whole layer; h_0 the
# input mix (Eq. 12 through Eq. 3's width connection, after Eq. 10's norm); H_bar Eq. 10; B Eq. 11 (the
# depth connections of Eq. 6); A_m, A_r Eqs. 12 and 13 (the width connections of Eq. 7); each on Eq. 8's matrix.
DYNAMIC_CHECKS = {
    "out": ("hc.eq8", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.eq3", "hc.eq5", "hc.eq6", "hc.eq7",
            "hc.alg2", "hc.alg3"),
    "h0": ("hc.eq8", "hc.eq10", "hc.eq12", "hc.eq3", "hc.eq7", "hc.alg3"),
    "H_bar": ("hc.eq10", "hc.alg2"),
    "B": ("hc.eq8", "hc.eq10", "hc.eq11", "hc.eq6", "hc.alg2"),
    "A_m": ("hc.eq8", "hc.eq10", "hc.eq12", "hc.eq7", "hc.alg2"),
    "A_r": ("hc.eq8", "hc.eq10", "hc.eq13", "hc.eq7", "hc.alg2"),
}
QUANTITIES_DYNAMIC = [pytest.param(q, marks=pytest.mark.gate_checks(*checks), id=q)
                      for q, checks in DYNAMIC_CHECKS.items()]


@pytest.mark.gate(equations=["hc.eq1", "hc.eq2", "hc.eq3", "hc.eq4", "hc.eq5", "hc.eq6", "hc.eq7", "hc.eq14",
                             "hc.setup", "hc.readout_sum", "hc.alg2"],
                  mechanism="hyper_connection", gate_class="init_through_module")
@pytest.mark.parametrize("case", CASES_EQ14)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_eq14_init_reproduces_the_prenorm_residual_and_layer_k_reads_stream_k_mod_n(subject, device, dtype, dynamic,
                                                                                     case):
    """n = 3, d = 2, L = 4 layers T_k(h) = h W_k, each module as its factory builds it for layer k (Eq. 14:
    B = 1, A_m = e_(k mod n), A_r = I; W_* = 0): nothing is written, the gate uses the parameters the
    factory created.

    case "replicated": input (h, h, h); every stream stays the Pre-Norm residual r_k = r_(k-1) + r_(k-1) W_k and
    the summed readout is 3 r_L = [18.375, 18.375]. case "distinct": rows [[1, 2], [3, -1], [0, 1]]; layer k
    reads row k mod 3, so the readout [3.25, -1.75] depends on the layer index (reading row (k+1) mod 3
    gives the prediction hc.static.layer_index_shifted, [76.375, 86.375]). Each case is its own instance
    (one case, one instance). Readouts are asserted before the per-layer states (the prediction is about
    the readout). With dynamic=True the zero-initialised dynamic part must change nothing.
    """
    fx = "hc.static_eq14"
    n = int(fixture(fx)["inputs"]["n"])
    Ws = list(value(fx, "W", dtype, device))
    if case == "distinct":
        want_distinct = expected(fx, "distinct_readout", torch.float64, device)
        pred = torch.tensor(fixture(fx)["predictions"]["hc.static.layer_index_shifted"]["float64"],
                            dtype=torch.float64, device=device)
        separation = float(((pred - want_distinct).abs() / want_distinct.abs()).max() / STATIC_TOL.rtol(dtype))
        readings.record(separation, "fixture_separation")
        if separation < 10:
            raise ValueError(f"{fx}: the layer-index prediction lies only {separation:.3g} tolerances away: weak gate")
        distinct, last = _run_layers(subject, value(fx, "H0_distinct", dtype, device), Ws, n, dynamic, dtype, device)
        assert_close(last.readout(distinct[-1]), expected(fx, "distinct_readout", dtype, device), STATIC_TOL,
                     what="summed readout of the distinct-rows input (depends on A_m = e_(k mod n))")
        want_states = expected(fx, "distinct_H", dtype, device)
        for k, state in enumerate(distinct):
            assert_close(state, want_states[k], STATIC_TOL, what=f"distinct-rows H after {k} layers")
        return
    h = value(fx, "h", dtype, device)
    first = _hc(subject, n, h.shape[-1], 0, dynamic, dtype, device)
    replicated, last = _run_layers(subject, first.expand(h), Ws, n, dynamic, dtype, device)
    assert_close(last.readout(replicated[-1]), expected(fx, "replicated_readout", dtype, device), STATIC_TOL,
                 what="summed readout of the replicated input (n x the Pre-Norm residual)")
    want_states = expected(fx, "replicated_H", dtype, device)
    prenorm = expected(fx, "replicated_prenorm", dtype, device)
    for k, state in enumerate(replicated):
        assert_close(state, want_states[k], STATIC_TOL, what=f"replicated H after {k} layers")
        assert_close(state, prenorm[k].expand_as(state), STATIC_TOL, what=f"every stream = Pre-Norm residual r_{k}")


@pytest.mark.gate(equations=["hc.eq8", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.eq14",
                             "hc.eq6", "hc.eq7", "hc.alg2"],
                  mechanism="hyper_connection", gate_class="init_through_module")
@pytest.mark.parametrize("quantity", QUANTITIES_ZERO)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_dhc_with_zero_dynamic_weights_is_static_hc(subject, device, dtype, quantity):
    """DHC as its factory builds it at layer k = 0 (Eq. 14: W_beta = W_m = W_r = 0, B = 1, A_m = e_0, A_r = I),
    nothing written: tanh(H_bar 0) = 0, so B(H) = B = [1, 1, 1], A_m(H) = e_0, A_r(H) = I and the layer is
    exactly static HC at k = 0, whatever the module's s_alpha, s_beta and LayerNorm are.

    One quantity per instance (a subject without static HC is refused only where the static module is
    needed): out against the oracle; the static module's out against the oracle; DHC's out against the
    static module's; B, A_m, A_r.
    """
    fx = "hc.dhc_zero_weights"
    H = value(fx, "H", dtype, device)
    n, d = H.shape
    W = value(fx, "W_T", dtype, device)
    k = fixture(fx)["params"]["layer_index"]
    if quantity == "static_out":
        static_out = _hc(subject, n, d, k, False, dtype, device)(H, LinearBody(W))
        assert_close(static_out, expected(fx, "static_out", dtype, device), STATIC_TOL, what="static HC out")
        return
    dyn = _hc(subject, n, d, k, True, dtype, device)
    if quantity in ("out", "out_vs_static"):
        out = dyn(H, LinearBody(W))
        if quantity == "out":
            assert_close(out, expected(fx, "out", dtype, device), STATIC_TOL, what="DHC out with zero dynamic weights")
        else:
            static_out = _hc(subject, n, d, k, False, dtype, device)(H, LinearBody(W))
            assert_close(out, static_out, STATIC_TOL, what="DHC out against the static module's out")
        return
    alpha, beta = dyn.connections(H)
    got = {"B": beta.unsqueeze(0), "A_m": alpha[..., :1], "A_r": alpha[..., 1:]}[quantity]
    assert_close(got, expected(fx, quantity, dtype, device), STATIC_TOL, what=f"{quantity}(H)")


@pytest.mark.gate(equations=["hc.eq8", "hc.eq9", "hc.eq10", "hc.eq11", "hc.eq12", "hc.eq13", "hc.eq3", "hc.eq5",
                             "hc.eq6", "hc.eq7", "hc.alg2", "hc.alg3"],
                  mechanism="hyper_connection")
@pytest.mark.parametrize("quantity", QUANTITIES_DYNAMIC)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_dhc_dynamic_coefficients_follow_eqs_10_to_13(subject, device, dtype, quantity):
    """DHC, n = 2, d = 3, layer k = 1, s_alpha = s_beta = 1/10, non-zero W_beta, W_m, W_r:
    H_bar = LayerNorm per stream (eps 1e-5), B(H) = s_beta tanh(H_bar W_beta)^T + B,
    [A_m A_r](H) = s_alpha tanh(H_bar [W_m W_r]) + [A_m A_r], h_0 = A_m(H)^T H, out = B(H)^T T(h_0) + A_r(H)^T H.

    One quantity per instance (a subject without a LayerNorm is refused for H_bar only): out; the layer
    input h_0 the body received (Alg. 3: the body, which applies its own pre-norm, reads mix_h row 0 =
    A_m(H)^T H); H_bar (the module's own norm); B (the depth-connection weights of Eq. 6); A_m and A_r
    (the width-connections WC of Eq. 7).
    """
    fx = "hc.dhc_dynamic"
    H = value(fx, "H", dtype, device)
    n, d = H.shape
    k = fixture(fx)["inputs"]["k"]
    m = _hc(subject, n, d, k, True, dtype, device)
    with torch.no_grad():
        m.dynamic_alpha_fn.copy_(torch.cat([value(fx, "W_m", dtype, device), value(fx, "W_r", dtype, device)], dim=1))
        m.dynamic_beta_fn.copy_(value(fx, "W_beta", dtype, device)[:, 0])
        m.alpha_scale.fill_(value(fx, "s_alpha").item())
        m.beta_scale.fill_(value(fx, "s_beta").item())
    if quantity in ("out", "h0"):
        body = LinearBody(value(fx, "W_T", dtype, device))
        out = m(H, body)
        if quantity == "out":
            assert_close(out, expected(fx, "out", dtype, device), DYNAMIC_OUT_TOL, what="DHC out")
        else:
            assert_close(body.inputs[0], expected(fx, "h0", dtype, device)[0], DYNAMIC_TOL,
                         what="layer input h_0 = A_m(H)^T H")
        return
    if quantity == "H_bar":
        assert_close(m.layer_norm(H), expected(fx, "H_bar", dtype, device), DYNAMIC_TOL,
                     what="H_bar = LayerNorm(H) per stream")
        return
    alpha, beta = m.connections(H)
    got = {"B": beta.unsqueeze(0), "A_m": alpha[..., :1], "A_r": alpha[..., 1:]}[quantity]
    assert_close(got, expected(fx, quantity, dtype, device), DYNAMIC_TOL, what=f"{quantity}(H)")
