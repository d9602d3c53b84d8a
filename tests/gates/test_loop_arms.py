"""Gates: the residual arms of the weight-shared loop model, compared ON SHARED WEIGHTS.

Source 004 section 5.3a: two modules built in one process are two random draws (measured
relative difference 1.686 between "the same" model built twice). So every gate here builds
ONE model from an explicit torch.Generator and switches the arm in place with `set_arm`:
same embedding, same body, same readout, one statement apart.

The mHC arm uses the sliced layout (source 004's): h_ctx IS the stream state x_l, the body
sees the whole hidden, so at init the mHC write is ReZero's write at residual_scale = 1 plus
exactly (H_res - I) x_l (H_post = 2 sigma(0) = 1 exactly, phi = 0). In the paper layout the
body reads H_pre x = sigma(10) * n * h, a different function at init by construction.
"""

import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.fixture_values import fixture
from fidelity.mechanisms.loop_model import config_class

DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
ARMS = ("rezero", "attnres", "mhc", "hc")
# The logits of two arms are O(1) numbers computed through T iterations of a few ops each;
# 64 eps of their scale is what rounding alone can move them. Used as the floor of comparisons
# of logit DIFFERENCES, and as the threshold above which "the readout moved".
ROUNDING_EPS = 64


def build(subject, device, dtype, seed=7, **config):
    """ONE loop model from an explicit generator (weights drawn on the CPU, then moved to `device`)."""
    factory = subject.get("loop_model")
    config_type = config_class(factory)
    return factory(config_type(**config), torch.Generator().manual_seed(seed), dtype=dtype, device=device)


def tokens(model, device, seed=11):
    return torch.randint(0, model.config.vocab, (2, 5), generator=torch.Generator().manual_seed(seed)).to(device)


def run(model, toks, arm):
    model.set_arm(arm)
    with torch.no_grad():
        logits, trace = model(toks, return_trace=True)
    return [t.to(torch.float64) for t in logits], trace


def init_h_res(n: int, device) -> torch.Tensor:
    """SK(10 I) from the oracle's fixture mhc.init_identity: diag e^10/(e^10+n-1), off 1/(e^10+n-1)."""
    group = fixture("mhc.init_identity")["expected"][f"n{n}"]
    diag, off = group["diag"]["float64"], group["off"]["float64"]
    eye = torch.eye(n, dtype=torch.float64, device=device)
    return off + (diag - off) * eye


@pytest.mark.gate(equations=["mhc.init_static_bias", "mhc.eq3", "mhc.eq8", "mhc.layout.sliced"], mechanism="loop_model")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", [2, 4])
def test_mhc_at_init_is_rezero_at_scale_one_up_to_the_predicted_e_minus_10_terms(subject, device, dtype, n):
    """mHC at init vs ReZero at residual_scale = 1, on one model: bounded below AND above by the mechanism.

    Iteration 0 (both arms read the same h_ctx = h_0 + e_0): the logits differ by EXACTLY
    readout(vec((H_res - I) x_0)) with H_res = SK(10 I) from the oracle ((n-1)/(e^10+n-1) off I);
    asserted two-sided (floor: 64 eps of the logits' scale), so an arm that is bit-for-bit ReZero
    fails (difference 0), and so does one whose H_post or H_res is off (difference O(1)).
    Every iteration k: with F_k ReZero's step (Lipschitz 1 + L, L = ||W2|| ||W1||, tanh being
    1-Lipschitz) and the mHC step F_k + E_k, ||E_k|| <= ||H_res - I||_2 ||x_k|| = n off ||x_k||
    per token, the state distance obeys D_(k+1) <= (1 + L) D_k + n off ||x_k|| (+ 64 eps of the
    state for the write's rounding), and the logits differ by at most ||W_out||_2 D_(k+1).
    Reading: the worst ratio of observed difference to that bound (must be <= 1).
    """
    model = build(subject, device, dtype, arm="rezero", mhc_streams=n, mhc_layout="sliced")
    assert_close(model.residual_scale.detach(), torch.tensor(1.0, dtype=torch.float64), Tolerance(1, floor=1.0),
                 dtype=dtype, what="residual_scale at init (ReZero at its own init is h_ctx + y)")
    toks = tokens(model, device)
    rz, _ = run(model, toks, "rezero")
    mh, trace = run(model, toks, "mhc")
    eps = torch.finfo(dtype).eps
    H = init_h_res(n, device)
    eye = torch.eye(n, dtype=torch.float64, device=device)
    W_out = model.readout_w.detach().to(torch.float64)

    # iteration 0: exact
    x0 = trace[0]["h_ctx"].detach().to(torch.float64)
    streams = x0.reshape(*x0.shape[:-1], n, x0.shape[-1] // n)
    predicted = ((H - eye) @ streams).reshape(x0.shape) @ W_out.T
    scale = float(rz[0].abs().max())
    assert_close(mh[0] - rz[0], predicted, Tolerance(ROUNDING_EPS, floor=scale), dtype=dtype,
                 what=f"logit difference mHC - ReZero at iteration 0, n = {n}, against readout((SK(10 I) - I) x_0)")

    # every iteration: the Lipschitz-propagated upper bound
    W1, W2 = model.body_w1.detach().to(torch.float64), model.body_w2.detach().to(torch.float64)
    if model.config.activation != "tanh":
        raise ValueError("the bound uses tanh's Lipschitz constant 1; build the model with activation='tanh'")
    lip = 1.0 + float(torch.linalg.matrix_norm(W2, ord=2) * torch.linalg.matrix_norm(W1, ord=2))
    nu = float(torch.linalg.matrix_norm(H - eye, ord=2))  # = n * off
    w_out = float(torch.linalg.matrix_norm(W_out, ord=2))
    distance = torch.zeros(x0.shape[:-1], dtype=torch.float64, device=device)
    worst = 0.0
    for k, record in enumerate(trace):
        ctx = record["h_ctx"].detach().to(torch.float64)
        state = record["state"].detach().to(torch.float64)
        distance = lip * distance + nu * ctx.norm(dim=-1) + ROUNDING_EPS * eps * state.norm(dim=-1)
        bound = w_out * distance + ROUNDING_EPS * eps * (rz[k].norm(dim=-1) + mh[k].norm(dim=-1))
        worst = max(worst, float(((mh[k] - rz[k]).norm(dim=-1) / bound).max()))
    assert_bound(worst, at_most=1.0,
                 what=f"max over iterations and tokens of |logits_mHC - logits_ReZero| / propagated bound, n = {n}")


@pytest.mark.gate(equations=["mhc.eq3", "mhc.layout.sliced"], mechanism="loop_model")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_each_arm_moves_only_its_own_write(subject, device, dtype):
    """ReZero's knob moves ReZero and leaves mHC EXACTLY unchanged; b_res moves mHC and leaves ReZero EXACTLY unchanged.

    residual_scale 1.0 -> 0.5 and b_res 10 I -> 2 (J - I) (mhc.composite_perturbed's b_res, far from
    the identity), each on the one model, each restored before the next. "Moves": by more than
    64 eps of the logits' scale. Unchanged: max|difference| == 0.0 exactly (a slip that leaks
    ReZero's scalar into the mHC write is invisible to "did the output change" and fatal here).
    Reading of a red: the offending difference.
    """
    model = build(subject, device, dtype, arm="rezero", mhc_streams=2, mhc_layout="sliced")
    toks = tokens(model, device)
    eps = torch.finfo(dtype).eps
    base = {arm: run(model, toks, arm)[0] for arm in ("rezero", "mhc")}

    def change(arm):
        now = run(model, toks, arm)[0]
        moved = max(float((a - b).abs().max()) for a, b in zip(now, base[arm]))
        return moved, max(float(b.abs().max()) for b in base[arm])

    n = model.config.mhc_streams
    b_res_init = model.mhc.b_res.detach().clone()
    with torch.no_grad():
        model.residual_scale.fill_(0.5)
    moved, scale = change("rezero")
    assert_bound(moved / scale, at_least=ROUNDING_EPS * eps,
                 what="relative change of ReZero when residual_scale 1 -> 0.5")
    unchanged, _ = change("mhc")
    assert_bound(unchanged, at_most=0.0, what="max|change| of mHC when residual_scale 1 -> 0.5 (must be exactly 0)")
    with torch.no_grad():
        model.residual_scale.fill_(1.0)
        off = float(fixture("mhc.composite_perturbed")["inputs"]["b_res_offdiagonal"])
        model.mhc.b_res.copy_(off * (torch.ones(n, n) - torch.eye(n)).to(dtype=dtype, device=device))
    moved, scale = change("mhc")
    assert_bound(moved / scale, at_least=ROUNDING_EPS * eps, what="relative change of mHC when b_res 10 I -> 2 (J - I)")
    unchanged, _ = change("rezero")
    assert_bound(unchanged, at_most=0.0, what="max|change| of ReZero when b_res moves (must be exactly 0)")
    with torch.no_grad():
        model.mhc.b_res.copy_(b_res_init)


@pytest.mark.gate(equations=["mhc.eq3", "hc.eq5", "attnres.eq2"], mechanism="loop_model")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_the_readout_at_every_iteration_moves_when_the_arm_changes(subject, device, dtype):
    """For every pair of arms and EVERY iteration k, the readout's logits differ by more than rounding
    (64 eps of their scale).

    A merge exercised only at its first step is not exercised: this asserts each iteration's
    readout sees the arm's write. Reading: the smallest relative difference over pairs and k.
    """
    model = build(subject, device, dtype, arm="rezero", mhc_streams=2, mhc_layout="sliced")
    toks = tokens(model, device)
    logits = {arm: run(model, toks, arm)[0] for arm in ARMS}
    smallest, where = float("inf"), None
    for i, a in enumerate(ARMS):
        for b in ARMS[i + 1:]:
            for k, (la, lb) in enumerate(zip(logits[a], logits[b])):
                rel = float((la - lb).abs().max() / torch.maximum(la.abs().max(), lb.abs().max()))
                if rel < smallest:
                    smallest, where = rel, (a, b, k)
    assert_bound(smallest, at_least=ROUNDING_EPS * torch.finfo(dtype).eps,
                 what=f"smallest relative readout difference between two arms at one iteration (at {where})")
