"""Gates: the mHC residual's factory and forward refuse what the interface says they refuse, each case its own instance.

fidelity discover --module fidelity.impl.torch.mhc found every guard of the factory and of the
stream-state check unheld (only n = 0 had a gate): with a guard removed, C = 0 built an empty
block, an unknown layout silently ran the sliced one, dynamic_init_std = -1 or 0.5 without a
generator crashed with an AttributeError, and a float64 state met float32 parameters as a torch
RuntimeError from the matmul instead of the documented TypeError ("no silent casts").
The interface (fidelity show mechanism:mhc_residual): ValueError for C < 1, an unknown layout,
dynamic_init_std < 0, or dynamic_init_std > 0 without a generator; forward: TypeError when x's dtype
differs from the parameters', ValueError for a wrong shape. C = 1 is valid and must build.

Reading `as_documented`: 1 when the case behaved as the interface says (refused with the named
error, or built), 0 otherwise; the message names what happened instead (fidelity.gates.refusals).
"""
import pytest
import torch

from fidelity.gates.refusals import assert_behaves_as_documented

N, C = 2, 3


def _build(factory, device, **kw):
    return lambda: factory(N, kw.pop("C", C), device=device, **kw)


def _call(factory, device, x_dtype=torch.float32, shape=(N, C)):
    def run():
        module = factory(N, C, dtype=torch.float32, device=device)
        x = torch.ones(shape, dtype=x_dtype, device=device)
        return module(x, lambda v: v)
    return run


# case -> (the call, the error the interface names, or None when it must succeed)
CASES = {
    "C_zero": (lambda f, d: _build(f, d, C=0), ValueError),
    "C_one_builds": (lambda f, d: _build(f, d, C=1), None),
    "layout_unknown": (lambda f, d: _build(f, d, layout="unknown"), ValueError),
    "dynamic_init_std_negative": (lambda f, d: _build(f, d, dynamic_init_std=-1.0), ValueError),
    "dynamic_init_std_without_generator": (lambda f, d: _build(f, d, dynamic_init_std=0.5), ValueError),
    "state_dtype_differs": (lambda f, d: _call(f, d, x_dtype=torch.float64), TypeError),
    "state_shape_wrong": (lambda f, d: _call(f, d, shape=(N, C + 1)), ValueError),
}

# case -> the equations it exercises: a finding is listed under these alone (a width the module accepts is no
# finding about a layout, and a subject that refuses the sliced layout has no sliced path to blame)
CHECKS = {
    "C_zero": ("mhc.eq3",),
    "C_one_builds": ("mhc.eq3", "mhc.eq7"),
    "layout_unknown": ("mhc.layout.sliced", "mhc.layout.replicated"),
    "dynamic_init_std_negative": ("mhc.init_dynamic",),
    "dynamic_init_std_without_generator": ("mhc.init_dynamic",),
    "state_dtype_differs": ("mhc.eq3",),
    "state_shape_wrong": ("mhc.eq3",),
}


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.layout.sliced", "mhc.layout.replicated", "mhc.init_dynamic"],
                  mechanism="mhc_residual")
@pytest.mark.parametrize("case", [pytest.param(case, marks=pytest.mark.gate_checks(*CHECKS[case]), id=case)
                                  for case in sorted(CASES)])
def test_each_invalid_argument_is_refused_with_the_documented_error(subject, device, case):
    """The case's call raises exactly the interface's error (or, for C = 1, builds)."""
    make, error = CASES[case]
    assert_behaves_as_documented(make(subject.get("mhc_residual"), device), error, case=case)
