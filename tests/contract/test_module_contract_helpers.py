"""The helpers behind the module gate classes fail on the defect each is for, and pass on a sound module."""
import pytest
import torch

from fidelity.gates.gate_classes import GATE_CLASSES, UnknownGateClass, applies, check_gate_class
from fidelity.gates.gradient_reach import assert_gradients_reach, dead_gradients
from fidelity.gates.jacobians import assert_gradcheck_every_tensor
from fidelity.gates.parameters_alive import assert_moves_output


class Affine(torch.nn.Module):
    def __init__(self, detach_bias=False, ignore_scale=False):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor([1.5, -0.5], dtype=torch.float64))
        self.bias = torch.nn.Parameter(torch.tensor([0.25, 2.0], dtype=torch.float64))
        self.detach_bias, self.ignore_scale = detach_bias, ignore_scale

    def forward(self, x):
        bias = self.bias.detach() if self.detach_bias else self.bias
        scale = torch.ones_like(self.scale) if self.ignore_scale else self.scale
        return torch.tanh(x * scale + bias)


def _x():
    return torch.tensor([[0.3, -1.2], [0.7, 0.1]], dtype=torch.float64, requires_grad=True)


def test_a_detached_parameter_is_named_as_a_dead_gradient():
    m, x = Affine(detach_bias=True), _x()
    tensors = {"x": x, **dict(m.named_parameters())}
    assert dead_gradients(lambda: m(x), tensors) == ["bias"]
    with pytest.raises(AssertionError, match="bias"):
        assert_gradients_reach(lambda: m(x), tensors, what="affine")


def test_every_gradient_reaches_through_a_sound_module():
    m, x = Affine(), _x()
    assert assert_gradients_reach(lambda: m(x), {"x": x, **dict(m.named_parameters())}, what="affine") == 0


def test_gradcheck_of_every_tensor_passes_a_sound_module_and_names_a_detached_parameter():
    m, x = Affine(), _x()
    tensors = {"x": x, **dict(m.named_parameters())}
    assert assert_gradcheck_every_tensor(lambda: m(x), tensors, step=1e-6, atol=1e-8, rtol=1e-6, what="affine") <= 1
    bad = Affine(detach_bias=True)
    with pytest.raises(AssertionError, match="'bias'"):
        assert_gradcheck_every_tensor(lambda: bad(x), {"x": x, **dict(bad.named_parameters())}, step=1e-6,
                                      atol=1e-8, rtol=1e-6, what="affine")


class _OneElementDropped(torch.autograd.Function):
    """x * w whose backward drops the gradient of w's element `index` alone (a hand-written backward's slip)."""

    @staticmethod
    def forward(ctx, x, w, index):
        ctx.save_for_backward(x, w)
        ctx.index = index
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gw = (g * x).sum(dim=0)
        gw[ctx.index] = 0.0
        return g * w, gw, None


@pytest.mark.parametrize("index", range(6))
def test_gradcheck_along_random_directions_sees_one_wrong_element_of_a_wide_parameter(index):
    """The central differences are taken along two random directions per tensor, not per element: a backward
    wrong in one element of six must still read red, whichever element it is."""
    x = torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(2, 6)
    w = torch.nn.Parameter(torch.linspace(0.5, 2.0, 6, dtype=torch.float64))
    with pytest.raises(AssertionError, match="'w'"):
        assert_gradcheck_every_tensor(lambda: torch.tanh(_OneElementDropped.apply(x, w, index)), {"w": w}, step=1e-6,
                                      atol=1e-8, rtol=1e-6, what="x * w")


def test_gradcheck_restores_every_shifted_element():
    m, x = Affine(), _x()
    before = m.scale.detach().clone()
    assert_gradcheck_every_tensor(lambda: m(x), {"scale": m.scale}, step=1e-3, atol=1, rtol=1, what="affine")
    assert torch.equal(m.scale.detach(), before)


def test_a_parameter_with_no_effect_moves_the_output_by_nothing():
    x = _x().detach()
    for ignore, should_pass in ((False, True), (True, False)):
        m = Affine(ignore_scale=ignore)
        before = m(x).detach()
        with torch.no_grad():
            m.scale.add_(torch.tensor([1e-3, -1e-3], dtype=torch.float64))
        with torch.no_grad():
            step = torch.tensor([1e-3, -1e-3], dtype=torch.float64)
            oracle = float((torch.tanh(x * m.scale + m.bias) - torch.tanh(x * (m.scale - step) + m.bias)).abs().max())
        if should_pass:
            assert assert_moves_output(before, m(x), oracle, what="scale") == pytest.approx(1.0)
        else:
            with pytest.raises(AssertionError, match="change"):
                assert_moves_output(before, m(x), oracle, what="scale")


def test_gate_classes_refuse_an_unknown_name_and_know_what_applies_to_a_function():
    assert check_gate_class("stateless", "t") == "stateless" and check_gate_class(None, "t") is None
    with pytest.raises(UnknownGateClass, match="gradient_reach"):
        check_gate_class("gradient-reach", "tests/gates/test_x.py::test_y")
    assert not applies("parameters_alive", "function") and applies("parameters_alive", "module")
    assert all(applies(c, "module") for c in GATE_CLASSES)
