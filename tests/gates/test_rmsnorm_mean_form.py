"""Gates: RMSNorm, mean form with eps inside the root (rmsnorm.mean_form, attnres.rmsnorm, attnres.eps).

The subject interface has no RMSNorm mechanism: RMSNorm is reached as the key norm of
depth attention. Two gates, because there are two norms to hold:

1. `test_key_rmsnorm_read_through_depth_attention_scores` (every subject): the key norm
   the depth attention really uses. With sources [x, e_k] (k != j), the query e_j and the
   gain g, the paper score of source 0 is s_0 = g_j x_j / sqrt(mean(x^2) + eps) =
   RMSNorm(x)_j and s_1 = 0 exactly, so RMSNorm(x)_j = ln(alpha_0 / alpha_1). It runs on
   any subject through `subject.get("depth_attention")`, including kernels that never
   call a separate norm (our torch reference inlines it in the score, it does not call
   fidelity.impl.torch.rmsnorm). A subject without a gain (Capability lacks=("gain",)) is called
   without one, and its unit-gain reading x_j / sqrt(mean(x^2) + eps) is multiplied by g_j (1, 1/2,
   2 or -1: exact) before the comparison with the oracle's y: the mean form and eps are held all the same.
2. `test_reference_rms_norm_module_is_the_mean_form` (the torch subject only): the
   module fidelity.impl.torch.rmsnorm itself (`rms_norm`, `RMSNorm`), which mHC and the
   loop model use; it is the torch subject's own code, so other subjects skip it.

Tolerance: y_i = x_i * rsqrt(mean(x^2) + eps) * g_i has a handful of roundings, each
<= 1 eps relative per entry (no cancellation): 8 eps. Read through the scores,
ln(alpha_0/alpha_1) adds the softmax's and the log's roundings, relative to |y_j| >= 0.24:
16 eps. Readings on the torch reference: <= 0.6 eps (module), <= 1.2 eps (scores).
"""
from __future__ import annotations

import importlib

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_bound, assert_close, separation
from fidelity.gates.fixture_values import expected, fixture, value
from fidelity.gates.optional_inputs import optional_input
from fidelity.gates.routes import routed

DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
ROUTES = ["autograd", "manual"]
FIXTURES = ["rmsnorm.example", "rmsnorm.eps_sensitive"]
MODULE_TOL = Tolerance(eps_multiple=8, floor=1e-30)
SCORES_TOL = Tolerance(eps_multiple=16, floor=1e-30)
REFERENCE_MODULE = "fidelity.impl.torch.rmsnorm"


def _case(fx: str, dtype, device):
    """(x, eps, gain or None) of an RMSNorm fixture."""
    raw = fixture(fx)["params"]["eps"]
    eps = float(raw["float64"]) if isinstance(raw, dict) else float(raw)
    gain = value(fx, "g", dtype, device) if "g" in fixture(fx)["inputs"] else None
    return value(fx, "x", dtype, device), eps, gain


def _assert_prediction_separated(fx: str, tol: Tolerance, dtype) -> None:
    """Each predicted defect of the fixture sits >= 10 tolerances from the right y (reading "fixture_separation")."""
    for name, pred in fixture(fx)["predictions"].items():
        right = fixture(fx)["expected"][pred["field"]]["float64"]
        sep = max(separation(e, w, tol, dtype) for e, w in zip(right, pred["float64"]))
        assert_bound(sep, at_least=10.0, reading_name="fixture_separation",
                     what=f"{fx}: separation of the predicted defect {name} from the right {pred['field']} (tolerances)")


@pytest.mark.gate(equations=["rmsnorm.mean_form", "rmsnorm.gain", "attnres.rmsnorm", "attnres.rmsnorm_gain",
                             "attnres.eps", "attnres.phi"], mechanism="depth_attention")
@pytest.mark.parametrize("fx", FIXTURES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_key_rmsnorm_read_through_depth_attention_scores(subject, device, dtype, backward, fx):
    """rmsnorm.example (x = [10, 20, 30, 40], eps = 0: y = [2, 4, 6, 8]/sqrt(30)) and
    rmsnorm.eps_sensitive (x = [1, -2, 3, -4]/1000, eps = 1e-5 comparable to mean(x^2),
    g = [1, 1/2, 2, -1]): RMSNorm(x)_j = ln(alpha_0/alpha_1) for sources [x, e_k], query e_j.
    """
    fn = routed(subject, "depth_attention", backward, gradient=False)
    x, eps, gain = _case(fx, dtype, device)
    given = optional_input(subject, "depth_attention", "gain", gain)
    d = x.shape[-1]
    eye = torch.eye(d, dtype=dtype, device=device)
    y = []
    for j in range(d):
        sources = torch.stack([x, eye[(j + 1) % d]])  # s_1 = q . (g e_k) * inv = g_j * 0 = 0
        _, alpha = fn(sources, eye[j], convention="paper", eps=eps, gain=given)
        a = alpha.detach().to(torch.float64)
        y.append(torch.log(a[0]) - torch.log(a[1]))
    read = torch.stack(y)
    if given is None and gain is not None:  # no gain given: the unit-gain norm, times g (powers of 2, exact)
        read = read * gain.detach().to(torch.float64)
    _assert_prediction_separated(fx, SCORES_TOL, dtype)
    assert_close(read, expected(fx, "y", dtype, device), SCORES_TOL, dtype=dtype,
                 what=f"{fx}: RMSNorm(x) read from the paper scores, ln(alpha_0 / alpha_1) per channel"
                      + (" (no gain given: times g)" if given is None and gain is not None else ""))


@pytest.mark.gate(equations=["rmsnorm.mean_form", "rmsnorm.gain"], mechanism="depth_attention",
                  targets=[REFERENCE_MODULE])
@pytest.mark.parametrize("fx", FIXTURES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reference_rms_norm_module_is_the_mean_form(subject, device, dtype, fx):
    """fidelity.impl.torch.rmsnorm: `rms_norm(x, eps, g)` and an `RMSNorm(d, eps)` module with
    its gain set to g, against the oracle's y (eps inside the root; on rmsnorm.eps_sensitive
    eps outside the root would give y 52% larger: a prediction kept >= 10 tolerances away).
    """
    if subject.name != "torch":
        pytest.skip(f"{REFERENCE_MODULE} is the torch subject's own module; subject {subject.name} is held to the "
                    "mean form through its depth-attention scores (test_key_rmsnorm_read_through_depth_attention_scores)")
    module = importlib.import_module(REFERENCE_MODULE)
    x, eps, gain = _case(fx, dtype, device)
    want = expected(fx, "y", dtype, device)
    _assert_prediction_separated(fx, MODULE_TOL, dtype)
    readings.record(assert_close(module.rms_norm(x, eps, gain), want, MODULE_TOL,
                                 what=f"{fx}: rms_norm(x, eps, g)"), "rms_norm")
    norm = module.RMSNorm(x.shape[-1], eps, dtype=dtype, device=device)
    if gain is not None:
        with torch.no_grad():
            norm.gain.copy_(gain)
    with torch.no_grad():
        got = norm(x)
    readings.record(assert_close(got, want, MODULE_TOL, what=f"{fx}: RMSNorm(d, eps) with gain g"), "RMSNorm")
