"""fidelity.gates.gradient_reach and parameters_alive on small modules: a gradient within rounding of the largest
(32 eps of it, in the dtype of the gradients) is dead and named with its size beside the largest others'; a small
live one is not; an oracle change within rounding of the output is refused as a measure of a parameter's effect."""
import pytest
import torch

from fidelity.gates.compare import GateFailure
from fidelity.gates.gradient_reach import assert_gradients_reach, dead_gradients
from fidelity.gates.parameters_alive import assert_moves_output


class Scaled(torch.nn.Module):
    """out = w x + scale * b x: b's gradient is `scale` times an O(1) one."""

    def __init__(self, scale: float, dtype) -> None:
        super().__init__()
        self.scale = scale
        self.w = torch.nn.Parameter(torch.tensor([1.5, -0.5, 2.0], dtype=dtype))
        self.b = torch.nn.Parameter(torch.tensor([0.3, 0.7, -1.1], dtype=dtype))

    def forward(self, x):
        return self.w * x + self.scale * self.b * x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_parameter_scaled_by_1e_30_is_dead_with_its_magnitude_beside_the_others(dtype):
    m, x = Scaled(1e-30, dtype), torch.tensor([1.0, 2.0, -3.0], dtype=dtype)
    assert dead_gradients(lambda: m(x), dict(m.named_parameters())) == ["b"]
    with pytest.raises(GateFailure) as red:
        assert_gradients_reach(lambda: m(x), dict(m.named_parameters()), what="scaled")
    said = str(red.value)
    assert "'b' " in said.split("; the largest others")[0] and "e-30" in said
    assert "the largest others: 'w' " in said


@pytest.mark.parametrize("dtype, scale", [(torch.float32, 1e-3), (torch.float64, 1e-10)])
def test_a_small_live_gradient_is_not_dead(dtype, scale):
    m, x = Scaled(scale, dtype), torch.tensor([1.0, 2.0, -3.0], dtype=dtype)
    assert assert_gradients_reach(lambda: m(x), dict(m.named_parameters()), what="small") == 0


def test_a_tensor_asked_about_alone_is_dead_only_at_zero():
    m, x = Scaled(1e-30, torch.float64), torch.tensor([1.0, 2.0, -3.0], dtype=torch.float64)
    assert dead_gradients(lambda: m(x), {"b": m.b}) == []


def test_an_oracle_change_within_rounding_of_the_output_is_refused():
    before = torch.tensor([1.0, -2.0], dtype=torch.float32)
    with pytest.raises(ValueError, match="within rounding of the output"):
        assert_moves_output(before, before.clone(), 1e-7, what="b")
