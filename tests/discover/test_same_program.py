"""A mutant whose module binds every name to an equal value is the same program: equivalent, proven at import.

Issue 31: swapping two independent module-level assignments (loop_model's `ARMS = ...` and
`ACTIVATIONS = ...`) left nothing for a probe to reach (import-time lines are not traced), so the
mutant stayed "undecided", and undecided now fails check. Whatever this cannot prove equal stays
for the probes: a changed value, default, body line or field order is never "the same program"."""
import pytest

from fidelity.discover import equivalence
from fidelity.discover.same_program import same_program

ORIGINAL = '''
from dataclasses import dataclass

import torch

ARMS = ("rezero", "mhc")
ACTIVATIONS = ("tanh", "gelu")
SCALE = 2.0


@dataclass(frozen=True)
class Config:
    arm: str = "rezero"
    width: int = 4


def scaled(x, factor=SCALE):
    if Config().arm not in ARMS:
        raise ValueError("unknown arm")
    return x * factor
'''

SWAPPED = ORIGINAL.replace('ARMS = ("rezero", "mhc")\nACTIVATIONS = ("tanh", "gelu")',
                           'ACTIVATIONS = ("tanh", "gelu")\nARMS = ("rezero", "mhc")')
NOT_THE_SAME = {
    "a module-level value": ORIGINAL.replace("SCALE = 2.0", "SCALE = 2.5"),
    "a default": ORIGINAL.replace("factor=SCALE", "factor=1.0"),
    "a line of a body": ORIGINAL.replace("return x * factor", "return x * factor * factor"),
    "the order of two dataclass fields": ORIGINAL.replace('    arm: str = "rezero"\n    width: int = 4',
                                                           '    width: int = 4\n    arm: str = "rezero"'),
    "a tuple's order": ORIGINAL.replace('ARMS = ("rezero", "mhc")', 'ARMS = ("mhc", "rezero")'),
}


def _load(source):
    return equivalence.load("toy_mutated", "toy_mutated.py", source)


def test_two_independent_module_level_assignments_swapped_are_the_same_program():
    assert SWAPPED != ORIGINAL
    assert same_program(_load(ORIGINAL), _load(SWAPPED))


@pytest.mark.parametrize("change", list(NOT_THE_SAME))
def test_a_change_any_code_can_read_is_never_the_same_program(change):
    assert not same_program(_load(ORIGINAL), _load(NOT_THE_SAME[change]))


def test_a_value_built_at_import_is_never_proven_equal():
    source = ORIGINAL + "\nTABLE = torch.ones(2)\n"
    assert not same_program(_load(source), _load(source))  # two tensors: their values are not read here


def test_decide_calls_the_swap_equivalent_at_import_and_names_how():
    lines = (6, 7)
    decision = equivalence.decide("toy_mutated", "toy_mutated.py", ORIGINAL, SWAPPED, lines)
    assert decision == {"verdict": "equivalent", "inputs": [equivalence.SAME_PROGRAM], "max_difference": 0.0,
                        "witness": None}
