"""Gates: the reference RMSNorm normalises each row over its LAST axis, and gradients pass through it.

fidelity discover --module fidelity.impl.torch.rmsnorm found both unheld: on the 1-D fixtures
the last axis is the only axis (a mean over dim 0 passed every gate), and no gate took a
gradient through rms_norm (a .detach() anywhere in it passed too).

1. Rows: x = [x_e; 2 x_e] with x_e the rmsnorm.example input (eps = 0). RMSNorm with eps = 0
   is scale-invariant per row, so both rows must equal the oracle's y for x_e; a norm over
   the wrong axis mixes the rows and gives neither. Tolerance as the mean-form gate: 8 eps.
2. Gradient: in float64 the Jacobian d rms_norm(x, eps, g) / dx by its own backward, and
   of rms_norm(x, eps) (the two branches), on seeded x [3, 5] and g [5] with eps = 1e-5,
   against central differences of the same function, by gradcheck's criterion
   (fidelity.gates.jacobians; the reading is the worst ratio, <= 1 passes): a detach on any
   intermediate drops a term of the Jacobian.
"""
from __future__ import annotations

import importlib

import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import expected, fixture, value
from fidelity.gates.jacobians import assert_gradcheck_criterion, jacobian_by_backward, jacobian_by_central_differences

REFERENCE_MODULE = "fidelity.impl.torch.rmsnorm"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
MODULE_TOL = Tolerance(eps_multiple=8, floor=1e-30)
FD_STEP, GRAD_ATOL, GRAD_RTOL = 1e-6, 1e-8, 1e-6  # float64 central differences of a smooth function


def _reference(subject):
    if subject.name != "torch":
        pytest.skip(f"{REFERENCE_MODULE} is the torch subject's own module")
    return importlib.import_module(REFERENCE_MODULE)


@pytest.mark.gate(equations=["rmsnorm.mean_form"], mechanism="depth_attention", targets=[REFERENCE_MODULE])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_each_row_is_normalised_over_its_last_axis(subject, device, dtype):
    module = _reference(subject)
    assert float(fixture("rmsnorm.example")["params"]["eps"]) == 0.0  # the scale invariance below needs eps = 0
    x = value("rmsnorm.example", "x", dtype, device)
    rows = torch.stack([x, 2 * x])
    want = expected("rmsnorm.example", "y", dtype, device)
    assert_close(module.rms_norm(rows, 0.0), torch.stack([want, want]), MODULE_TOL,
                 what="rms_norm of [x; 2 x], row by row (scale-invariant at eps = 0)")


@pytest.mark.gate(equations=["rmsnorm.mean_form", "rmsnorm.gain"], mechanism="depth_attention",
                  targets=[REFERENCE_MODULE])
def test_gradients_through_rms_norm_pass_gradcheck_in_float64(subject, device):
    module = _reference(subject)
    g = torch.Generator().manual_seed(14)
    x = torch.randn(3, 5, generator=g, dtype=torch.float64).to(device)
    gain = (torch.rand(5, generator=g, dtype=torch.float64) + 0.5).to(device)
    for branch, fn in (("with a gain", lambda a: module.rms_norm(a, 1e-5, gain)),
                       ("without a gain", lambda a: module.rms_norm(a, 1e-5))):
        # a leading batch of copies of x: rms_norm normalises the last axis, so copies are independent
        assert_gradcheck_criterion(jacobian_by_backward(fn, x), jacobian_by_central_differences(fn, x, FD_STEP),
                                   atol=GRAD_ATOL, rtol=GRAD_RTOL, what=f"d rms_norm / dx {branch}")
