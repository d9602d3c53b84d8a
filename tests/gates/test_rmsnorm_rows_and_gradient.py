"""Gates: the reference RMSNorm normalises each row over its LAST axis, and gradients pass through it.

fidelity discover --module fidelity.impl.torch.rmsnorm found both unheld: on the 1-D fixtures
the last axis is the only axis (a mean over dim 0 passed every gate), and no gate took a
gradient through rms_norm (a .detach() anywhere in it passed too).

1. Rows: x = [x_e; 2 x_e] with x_e the rmsnorm.example input (eps = 0). RMSNorm with eps = 0
   is scale-invariant per row, so both rows must equal the oracle's y for x_e; a norm over
   the wrong axis mixes the rows and gives neither. Tolerance as the mean-form gate: 8 eps.
2. Gradient: float64 gradcheck of rms_norm(x, eps, g) and of rms_norm(x, eps) (the two
   branches) on seeded x [3, 5] and g [5] with eps = 1e-5 against central differences of
   the same function: a detach on any intermediate drops a term of the Jacobian.
"""
from __future__ import annotations

import importlib

import pytest
import torch

from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import expected, fixture, value

REFERENCE_MODULE = "fidelity.impl.torch.rmsnorm"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
MODULE_TOL = Tolerance(eps_multiple=8, floor=1e-30)


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
    x = torch.randn(3, 5, generator=g, dtype=torch.float64).to(device).requires_grad_(True)
    gain = (torch.rand(5, generator=g, dtype=torch.float64) + 0.5).to(device).requires_grad_(True)
    with_gain = torch.autograd.gradcheck(lambda a, b: module.rms_norm(a, 1e-5, b), (x, gain), eps=1e-6,
                                         atol=1e-8, rtol=1e-6, raise_exception=False)
    without_gain = torch.autograd.gradcheck(lambda a: module.rms_norm(a, 1e-5), (x,), eps=1e-6, atol=1e-8,
                                            rtol=1e-6, raise_exception=False)
    cut = [name for name, ok in (("with a gain", with_gain), ("without a gain", without_gain)) if not ok]
    assert not cut, f"the autograd Jacobian of rms_norm {' and '.join(cut)} differs from central differences " \
                    "(a gradient path is cut)"
