"""Discovery's inputs follow the mechanism's declared shapes whatever their letters, and include one of
rank >= 3 whose axes all differ in size (issue 31: `[..., H]` gave no input at all, every survivor
"undecided"; and on 2-D inputs `dim=-1 -> dim=1` was called equivalent, a real defect on [batch, seq, H])."""
import types

import torch

from fidelity.discover import equivalence
from fidelity.discover.equivalence import BOUND, DISTINCT_AXES, SEEDS, SIZES, axis_sizes

LAYER_NORM = {"call": {"arguments": [
    {"name": "x", "required": True, "type": "Tensor", "shape": "[..., H]"},
    {"name": "gain", "required": False, "type": "Tensor | None", "shape": "[H]"},
]}}


def _norm(dim):
    def layer_norm(x, gain=None):
        y = (x - x.mean(dim=dim, keepdim=True)) / x.std(dim=dim, keepdim=True)
        return y if gain is None else y * gain
    return types.SimpleNamespace(layer_norm=layer_norm)


def _inputs(probe, label):
    return [probe.variants[label](seed, sizes) for sizes in SIZES for seed in SEEDS]


def test_a_letter_no_size_table_knows_gets_a_size_of_its_own_and_one_size_everywhere_it_appears():
    probe = equivalence._mechanism_probe("layer_norm", LAYER_NORM, routes=())
    for sizes in SIZES:
        sized = axis_sizes(sizes, ["[..., H]", "[H]"])
        assert sized["H"] not in sizes.values()
    for args, kwargs in _inputs(probe, "with gain"):
        assert args[0].shape[-1] == kwargs["gain"].shape[0]


def test_one_input_has_rank_three_or_more_and_no_two_axes_of_the_same_size():
    probe = equivalence._mechanism_probe("layer_norm", LAYER_NORM, routes=())
    for args, _ in _inputs(probe, DISTINCT_AXES):
        shape = args[0].shape
        assert len(shape) >= 3 and len(set(shape)) == len(shape), shape


def test_the_wrong_axis_is_told_apart_on_the_rank_three_input_though_every_2d_input_agrees():
    probe = equivalence._mechanism_probe("layer_norm", LAYER_NORM, routes=())
    original, mutant = _norm(-1), _norm(1)

    def worst(label):
        return max(equivalence._compare(probe.run(original, inputs, seed), probe.run(mutant, inputs, seed))[0]
                   for inputs, seed in zip(_inputs(probe, label), SEEDS * len(SIZES)))

    assert worst("defaults") <= BOUND  # [2, H]: dim 1 is the last axis, the defect does not show
    assert worst(DISTINCT_AXES) > BOUND


def test_plain_functions_get_a_rank_three_input_with_three_sizes_too():
    probe = equivalence._plain_probe("softmax", lambda x: torch.softmax(x, dim=-1))
    for args, _ in _inputs(probe, DISTINCT_AXES):
        assert len(args[0].shape) == 3 and len(set(args[0].shape)) == 3
