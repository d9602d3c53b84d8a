"""GateClassesFor: every generic gate class held on one declared mechanism, in one line of a gate file.

    class TestTemperedSoftmaxGateClasses(GateClassesFor, mechanism="tempered_softmax", example="paper.t2",
                                         refuses={"temperature": (0.0, -1.0)}):
        "The generic gate classes on tempered_softmax, at fixture paper.t2."

pytest collects one gate per class that applies, each a method of that test class marked
`@pytest.mark.gate(equations=<the mechanism's>, mechanism=..., gate_class=...)` and run per subject and
device like any gate; its id names the promise, e.g.
`tests/gates/test_x.py::TestTemperedSoftmaxGateClasses::test_stateless_a_call_leaves_no_state_behind`, which
a perturbation lists to see it red. Which classes apply: every one to a module mechanism but where said;
the module-only ones (train_eval, parameters_alive, init_through_module) not to a function;
init_through_module only where the module's Protocol states a numeric init (`Param(..., init="1")`);
defaults_as_shipped only where the interface declares an optional argument; gradients_from_oracle only
with `gradient_example=` (and its `gradient_tolerance=`); the refusals gate only with `refuses=` (name ->
values the interface refuses with ValueError; a factory's argument is refused when the module is built, a
call's when called).

Why a line and not automatic: each class needs an example the project chose (a fixture whose inputs the
mechanism accepts), and a gate is accepted only when a perturbation the project wrote sees it red; both
belong to the project, in its files, where a reader finds them. `fidelity init` writes the line.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import pytest
import torch

from fidelity.gates.compare import Tolerance
from fidelity.gates.gate_classes import GATE_CLASSES, applies_to
from fidelity.gates.library import classes
from fidelity.gates.declared_signatures import signatures
from fidelity.gates.library.example import Example
from fidelity.gates.marker_names import UnknownMarkerName, closest_names

BOTH = (torch.float32, torch.float64)
F64 = (torch.float64,)

GENERIC: dict[str, tuple[str, Callable, tuple[torch.dtype, ...]]] = {
    "stateless": ("test_stateless_a_call_leaves_no_state_behind", classes.stateless, BOTH),
    "dtype_device": ("test_dtype_device_outputs_keep_the_inputs_dtype_and_device", classes.dtype_device, BOTH),
    "train_eval": ("test_train_eval_the_same_bits_in_both_modes", classes.train_eval, BOTH),
    "defaults_as_shipped": ("test_defaults_as_shipped_are_the_interfaces_defaults", classes.defaults_as_shipped,
                            BOTH),
    "gradients_finite_differences": ("test_gradients_finite_differences_through_every_input_and_parameter",
                                     classes.gradients_finite_differences, F64),
    "gradient_reach": ("test_gradient_reach_every_input_and_parameter", classes.gradient_reach, BOTH),
    "init_through_module": ("test_init_through_module_is_what_the_interface_states", classes.init_through_module,
                            BOTH),
    "parameters_alive": ("test_parameters_alive_each_one_moves_the_output", classes.parameters_alive, BOTH),
    "gradients_from_oracle": ("test_gradients_from_oracle_match_its_gradient", classes.gradients_from_oracle, BOTH),
    "refusals": ("test_refusals_as_documented", classes.refusals, F64),
}
"""gate class -> (test name, gate body, dtypes): the classes GateClassesFor can generate."""


class GateClassesFor:
    """Subclass once per mechanism, named Test... so pytest collects it (see the module docstring).

    Keywords of the class statement:

    - `mechanism`: a declared mechanism's name (built-in, installed, or the project's `mechanisms` setting).
    - `example`: a fixture id whose `inputs` and `params` name the mechanism's arguments.
    - `refuses` (optional): argument name -> values the interface says raise ValueError.
    - `gradient_example` (optional): a fixture id with the call's inputs and params, a `cotangent` input shaped
      like the output, and the oracle's gradient of sum(cotangent x output) as expected `d_<name>` for inputs
      and parameters (a module's as built); gradients_from_oracle compares them.
    - `gradient_tolerance`: with `gradient_example`, the `Tolerance` it compares within (write why beside it).
    """

    example: Example
    refuses: Mapping[str, tuple] = {}
    gradient_example: Example | None = None
    gradient_tolerance: Tolerance | None = None

    def __init_subclass__(cls, *, mechanism: str, example: str, refuses: Mapping[str, Sequence] | None = None,
                          gradient_example: str | None = None, gradient_tolerance: Tolerance | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        declared = _declared(mechanism, cls.__name__)
        if not declared.equations:
            raise ValueError(f"{cls.__name__}: mechanism {mechanism!r} declares no equations; a gate holds a "
                             "mechanism to equations: give its Mechanism(equations=...)")
        if (gradient_example is None) != (gradient_tolerance is None):
            raise ValueError(f"{cls.__name__}: gradient_example and gradient_tolerance come together: the oracle's "
                             "gradient is compared within a Tolerance you state (and justify) yourself")
        cls.example = Example(declared, example)
        cls.gradient_example = None if gradient_example is None else Example(declared, gradient_example)
        cls.gradient_tolerance = gradient_tolerance
        cls.refuses = {name: tuple(values) for name, values in (refuses or {}).items()}
        _check_refused_names(declared, cls.refuses, cls.__name__)
        for gate_class in applicable(declared, bool(cls.refuses), gradient_example is not None):
            name, body, dtypes = GENERIC[gate_class]
            setattr(cls, name, _gate(body, name, declared, gate_class, dtypes))


def applicable(mechanism, refuses: bool, oracle_gradient: bool) -> list[str]:
    """The generic classes that can hold `mechanism` (see the module docstring for why each is left out)."""
    out = [c for c in GENERIC if c == "refusals" or applies_to(c, mechanism)]
    if not refuses:
        out.remove("refusals")
    if not oracle_gradient:
        out.remove("gradients_from_oracle")
    if mechanism.kind == "module" and not classes.stated_inits(mechanism):
        out.remove("init_through_module")
    return out


def _declared(name: str, where: str):
    from fidelity import project
    from fidelity.mechanisms.registry import project_mechanisms

    known = project_mechanisms(project.current_or_none())
    if name not in known:
        raise UnknownMarkerName(f"{where}: mechanism {name!r} is declared by no one ({closest_names(name, known)}); "
                                "fix the name, or declare it in the project's `mechanisms` setting")
    return known[name]


def _check_refused_names(mechanism, refuses: Mapping[str, tuple], where: str) -> None:
    taken = {p for sig in signatures(mechanism) for p in sig.parameters}
    unknown = sorted(set(refuses) - taken)
    if unknown:
        raise ValueError(f"{where}: refuses= names {unknown}, which no signature of {mechanism.name!r} takes "
                         f"({', '.join(sorted(taken))})")


def _gate(body: Callable, name: str, mechanism, gate_class: str, dtypes) -> Callable:
    def gate(self, subject, device, dtype):
        body(self, subject, device, dtype)

    gate.__name__ = gate.__qualname__ = name
    gate.__doc__ = body.__doc__
    gate = pytest.mark.parametrize("dtype", [pytest.param(d, id=str(d).removeprefix("torch.")) for d in dtypes])(gate)
    return pytest.mark.gate(equations=list(mechanism.equations), mechanism=mechanism.name,
                            gate_class=gate_class if gate_class in GATE_CLASSES else None)(gate)
