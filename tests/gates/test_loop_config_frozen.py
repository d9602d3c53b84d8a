"""Gate: the loop model's configuration is frozen, as the interface says.

fidelity.mechanisms.loop_model: LoopConfig is "a frozen dataclass built with keywords". Issue 13:
fidelity discover --module fidelity.impl.torch.loop_model left `@dataclass(frozen=False)`
undecided (every gate passed, and no probe assigns a field). A mutable configuration lets a field
be changed after the model was built from it, so the config a run reports is no longer the one
its model runs (and it cannot be hashed as a key). One instance per field of the config, each
assigned a value of its own type on a config built with every default: the assignment must raise
dataclasses.FrozenInstanceError, and the field must keep its value. Reading `frozen`: 1 when both
hold, 0 otherwise.
"""
from __future__ import annotations

import dataclasses

import pytest

from fidelity.gates.compare import assert_bound
from fidelity.mechanisms.loop_model import config_class

FIELDS = ["vocab", "d", "T", "arm", "activation"]  # fields of the interface, ints and strings


def _changed(value):
    return value + 1 if isinstance(value, int) else f"{value}-changed"


@pytest.mark.gate(equations=["attnres.loop.config"], mechanism="loop_model")
@pytest.mark.parametrize("field", FIELDS)
def test_assigning_a_field_of_a_built_loop_config_is_refused(subject, device, field):
    factory = subject.get("loop_model")
    config = config_class(factory)()
    before = getattr(config, field)
    outcome = "accepted"
    try:
        setattr(config, field, _changed(before))
    except dataclasses.FrozenInstanceError:
        outcome = "FrozenInstanceError"
    except Exception as exc:  # noqa: BLE001 - another error type is not the promised refusal
        outcome = type(exc).__name__
    kept = getattr(config, field) == before
    assert_bound(1 if outcome == "FrozenInstanceError" and kept else 0, at_least=1, reading_name="frozen",
                 what=f"LoopConfig().{field} = {_changed(before)!r} gave {outcome} and the field "
                      f"{'kept' if kept else 'lost'} its value {before!r}; the interface promises a frozen dataclass")
