"""The generic gate classes, each one promise held on any declared mechanism at one fixture's example.

Each function here is one class's gate body, `(gate, subject, device, dtype)`, where `gate` is the test
class a project declared (fidelity.gates.library.suite.GateClassesFor: its `example` and `refuses`).
None needs an oracle beyond the example's inputs: what they hold is what a mechanism must do whatever
its equations say (no state kept, dtype and device kept, the same in both modes, the interface's
defaults shipped, a backward that is the forward's derivative and reaches everything, parameters that
matter, refusals as documented). What the oracle alone knows (the values, the gradient's values, the
init) stays with the project's own gates.

Gradient classes move every parameter of a module off its init first (MOVE_OFF_INIT x N(0, 1), seeded):
a parameter initialised to zero would otherwise hide the terms it multiplies (their gradient is 0 at init).
"""
from __future__ import annotations

from typing import Any, Mapping

import torch

from fidelity.fixtures import store
from fidelity.gates.compare import assert_bound, assert_close
from fidelity.gates.fixture_values import expected, value
from fidelity.gates.jacobians import assert_gradcheck_every_tensor
from fidelity.gates.declared_signatures import signature_of
from fidelity.gates.library.instance import Instance
from fidelity.gates.gradient_reach import assert_gradients_reach
from fidelity.gates.parameters_alive import rounding_of
from fidelity.gates.refusals import outcome_of
from fidelity.gates.statelessness import (LISTED, assert_stateless, declared_kept_state, floating_results,
                                          result_differences)
from fidelity.gates.tensors import floating_tensors
from fidelity.gates.train_eval import assert_same_in_train_and_eval
from fidelity.mechanisms.introspect import named_parameters

COTANGENT = "cotangent"
"""The gradient fixture's input that weighs the output: the gate differentiates sum(cotangent x output)."""
MOVE_OFF_INIT = 0.25
"""Each parameter is moved by MOVE_OFF_INIT x N(0, 1) off its init before a gradient or liveness class runs."""
MOVE_SEED = 14_103
FD_STEP, FD_ATOL, FD_RTOL = 1e-6, 1e-8, 1e-6
"""float64 central differences at step 1e-6: truncation ~1e-12 |f'''| and rounding ~1e-10 |f| per entry, so
1e-8 absolute (gradcheck's criterion, fidelity.gates.jacobians) is 100x above both for an O(1) output."""
ALIVE_STEP = 0.25
"""parameters_alive moves one parameter at a time by ALIVE_STEP x N(0, 1) (seeded) from where it was moved."""


def _instance(gate, subject, device, dtype) -> Instance:
    gate.example.check_names()
    return Instance(gate.example, subject, device, dtype)


def _what(inst: Instance, promise: str) -> str:
    return f"{inst.where} at fixture {inst.example.fixture_id} ({str(inst.dtype).removeprefix('torch.')}): {promise}"


def _listed(found: list[str]) -> str:
    return "; ".join(found[:LISTED]) + (f"; and {len(found) - LISTED} more" if len(found) > LISTED else "")


def move_off_init(target) -> None:
    """Every parameter of a module target moved by MOVE_OFF_INIT x N(0, 1), seeded; a function has none."""
    if not isinstance(target, torch.nn.Module):
        return
    g = torch.Generator().manual_seed(MOVE_SEED)
    with torch.no_grad():
        for p in target.parameters():
            p.add_((MOVE_OFF_INIT * torch.randn(p.shape, generator=g, dtype=torch.float64)).to(p.device, p.dtype))


def stateless(gate, subject, device, dtype) -> None:
    """One object called on A, on B (other values), on A again: A's bits twice, B's not A's, no state changed."""
    inst = _instance(gate, subject, device, dtype)
    used, fresh = inst.make(), inst.make()
    a, b = inst.arguments(), inst.arguments(other=True)
    name = inst.mechanism.name
    assert_stateless(inst.caller(used, a), inst.caller(used, b), fresh_other=inst.caller(fresh, b),
                     modules=inst.modules(used), objects={} if inst.is_module else {name: used},
                     implementation=subject.modules.get(name, ()), kept=declared_kept_state(subject, name),
                     what=_what(inst, "the same call on A, B, A"))


def dtype_device(gate, subject, device, dtype) -> None:
    """Every floating output in the input's dtype and on its device; for a module, every floating parameter and
    buffer too, in the dtype and on the device its factory was asked for (a factory that drops its dtype= builds
    float32 weights whose float64 product with the input still comes out float64)."""
    inst = _instance(gate, subject, device, dtype)
    target = inst.make()
    outputs = list(floating_tensors(inst.caller(target, inst.arguments())()))
    if not outputs:
        raise ValueError(f"{inst.where} returned no floating tensor: nothing has a dtype to keep")
    held = list(target.named_parameters()) + list(target.named_buffers()) if inst.is_module else []
    wrong = [f"{name}: {str(t.dtype).removeprefix('torch.')} on {t.device.type}"
             for name, t in [(f"output {i}", o) for i, o in enumerate(outputs)] + held
             if t.is_floating_point() and (t.dtype != dtype or t.device.type != torch.device(device).type)]
    assert_bound(len(wrong), at_most=0, reading_name="reading",
                 what=_what(inst, f"outputs not in {str(dtype).removeprefix('torch.')} on {device}: {_listed(wrong)}"))


def train_eval(gate, subject, device, dtype) -> None:
    """A module gives the same bits in training mode, in eval mode, and in training mode again."""
    inst = _instance(gate, subject, device, dtype)
    target = inst.make()
    assert_same_in_train_and_eval(inst.caller(target, inst.arguments()), modules=inst.modules(target),
                                  what=_what(inst, "train, eval, train"))


def defaults_as_shipped(gate, subject, device, dtype) -> None:
    """Called (and built) with no optional argument: the same bits as with each of the interface's declared
    defaults written out. A subject that ships another default than its interface states differs."""
    inst = _instance(gate, subject, device, dtype)
    shipped = inst.caller(inst.make(defaults="drop"), inst.arguments(defaults="drop"))()
    stated = inst.caller(inst.make(defaults="state"), inst.arguments(defaults="state"))()
    found = result_differences(floating_results(stated), floating_results(shipped))
    assert_bound(len(found), at_most=0, reading_name="reading",
                 what=_what(inst, f"no optional argument given, against the interface's defaults written out: "
                                  f"{_listed(found) or 'the same bits'}"))


def _gradient_setup(gate, subject, device, dtype) -> tuple[Instance, Any, dict]:
    inst = _instance(gate, subject, device, dtype)
    target = inst.make()
    move_off_init(target)
    arguments = inst.arguments()
    leaves = inst.leaves(target, arguments)
    if not leaves:
        raise ValueError(f"{inst.where} at fixture {inst.example.fixture_id}: no floating input or parameter "
                         "to take a gradient of")
    return inst, inst.caller(target, arguments), leaves


def gradients_finite_differences(gate, subject, device, dtype) -> None:
    """float64 backward through the subject against central differences, for every input and parameter."""
    inst, forward, leaves = _gradient_setup(gate, subject, device, dtype)
    assert_gradcheck_every_tensor(forward, leaves, step=FD_STEP, atol=FD_ATOL, rtol=FD_RTOL,
                                  what=_what(inst, "backward against central differences"))


def gradient_reach(gate, subject, device, dtype) -> None:
    """Every floating input and parameter gets a gradient above rounding of the largest."""
    inst, forward, leaves = _gradient_setup(gate, subject, device, dtype)
    assert_gradients_reach(forward, leaves, what=_what(inst, "every input and parameter reached by the backward"))


def parameters_alive(gate, subject, device, dtype) -> None:
    """Each parameter moved alone (ALIVE_STEP x N(0, 1)) moves the output beyond rounding."""
    inst = _instance(gate, subject, device, dtype)
    target = inst.make()
    move_off_init(target)
    forward = inst.caller(target, inst.arguments())
    with torch.no_grad():
        before = _flat(forward())
        dead = [name for k, (name, p) in enumerate(target.named_parameters())
                if not _moved(forward, p, before, seed=MOVE_SEED + 1 + k)]
    assert_bound(len(dead), at_most=0, reading_name="dead_parameters",
                 what=_what(inst, f"parameters that do not move the output beyond rounding "
                                  f"({rounding_of(before):.3g}): {', '.join(dead)}"))


def _flat(result) -> torch.Tensor:
    return torch.cat([o.detach().reshape(-1) for o in floating_tensors(result)])


def _moved(forward, p: torch.Tensor, before: torch.Tensor, *, seed: int) -> bool:
    keep = p.detach().clone()
    g = torch.Generator().manual_seed(seed)
    p.add_((ALIVE_STEP * torch.randn(p.shape, generator=g, dtype=torch.float64)).to(p.device, p.dtype))
    after = _flat(forward())
    p.copy_(keep)
    return float((after.double() - before.double()).abs().max()) > rounding_of(before)


def gradients_from_oracle(gate, subject, device, dtype) -> None:
    """The backward of sum(cotangent x output) equals the oracle's gradient (`d_<name>`) for every floating input
    and every parameter, within the project's `gradient_tolerance`; a fixture that leaves one out is refused."""
    example = gate.gradient_example
    example.check_names(also=(COTANGENT,))
    inst = Instance(example, subject, device, dtype)
    target = inst.make()
    arguments = inst.arguments()
    leaves = {name.removeprefix(f"{inst.mechanism.name}."): t for name, t in inst.leaves(target, arguments).items()}
    wanted = [name.removeprefix("d_") for name in store.load_shared(example.fixture_id)["expected"]
              if name.startswith("d_")]
    unknown, untold = sorted(set(wanted) - set(leaves)), sorted(set(leaves) - set(wanted))
    if unknown or untold:  # a gradient the fixture leaves out would never be held to the oracle
        raise ValueError(f"fixture {example.fixture_id!r} must give the oracle's d_<name> for every floating input "
                         f"and parameter of {inst.mechanism.name!r} ({', '.join(sorted(leaves))})"
                         + (f"; it gives none for {', '.join(untold)}" if untold else "")
                         + (f"; {', '.join(unknown)} are none of them" if unknown else ""))
    output = inst.caller(target, arguments)()
    cotangent = value(example.fixture_id, COTANGENT, dtype, device)
    loss = (output * cotangent).sum()
    grads = (torch.autograd.grad(loss, [leaves[n] for n in wanted], allow_unused=True) if loss.requires_grad
             else (None,) * len(wanted))  # an output cut from its inputs: every gradient is zero, compared as such
    for name, grad in zip(wanted, grads):
        assert_close(torch.zeros_like(leaves[name]) if grad is None else grad,
                     expected(example.fixture_id, f"d_{name}", dtype, device), gate.gradient_tolerance,
                     what=_what(inst, f"d <cotangent, output> / d {name} against the oracle's"))


def init_through_module(gate, subject, device, dtype) -> None:
    """Each parameter whose Param states a number as its init (`Param(..., init="1")`) holds exactly that number
    in a module the factory builds from the example's arguments."""
    inst = _instance(gate, subject, device, dtype)
    target = inst.make()
    built = dict(target.named_parameters())
    wrong = []
    for name, number in stated_inits(inst.mechanism, inst.factory_arguments()).items():
        p = built.get(name)
        if p is None:
            wrong.append(f"{name}: the module has no such parameter (it has {', '.join(built) or 'none'})")
            continue
        off = int((p.detach() != number).sum())
        if off:
            wrong.append(f"{name}: {off} of {p.numel()} entries not {number:g} (max |p - {number:g}| "
                         f"{float((p.detach().double() - number).abs().max()):.3g})")
    assert_bound(len(wrong), at_most=0, reading_name="reading",
                 what=_what(inst, f"parameters not at the init their Param states: {_listed(wrong)}"))


def stated_inits(mechanism, factory_arguments: Mapping[str, Any] | None = None) -> dict[str, float]:
    """name -> the number a module Protocol's Param states as init, for parameters that exist under
    `factory_arguments` (None: under any; a `when` on a submodule's own argument cannot be read from the
    factory's arguments, so such a Param is left out)."""
    out = {}
    for name, declared, when in named_parameters(mechanism.module_interface):
        try:
            number = float(declared.init)
        except (TypeError, ValueError):  # no init, or one in words ("eye(n)", "scale_init = 0.01")
            continue
        if factory_arguments is None or all("." not in key and factory_arguments.get(key) == want
                                            for key, want in when.items()):
            out[name] = number
    return out


def refusals(gate, subject, device, dtype) -> None:
    """Each value the project says the interface refuses (`refuses=`) raises ValueError, the interface's error."""
    inst = _instance(gate, subject, device, dtype)
    factory_takes = set(signature_of(inst.mechanism.interface).parameters) if inst.is_module else set()
    wrong = []
    for name, values in gate.refuses.items():
        for bad in values:
            if name in factory_takes:
                happened = outcome_of(lambda: inst.caller(inst.make(override={name: bad}), inst.arguments())())
            else:
                target = inst.make()
                happened = outcome_of(lambda: inst.caller(target, inst.arguments(override={name: bad}))())
            if happened != "ValueError":
                wrong.append(f"{name}={bad!r}: {happened}")
    assert_bound(len(wrong), at_most=0, reading_name="reading",
                 what=_what(inst, f"values the interface refuses with ValueError, not refused so: {_listed(wrong)}"))

