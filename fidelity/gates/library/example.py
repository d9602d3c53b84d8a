"""One declared mechanism called on one fixture's example: the call every generic gate class repeats.

The mechanism's Protocols say what the call looks like; the fixture says with what. A function
mechanism is called as its `interface.__call__` declares; a module mechanism is built by its factory
(`interface.__call__`) and then called as its `module_interface` declares (`__call__`, else `forward`).
Each name of the fixture's `inputs` and `params` goes to the signature that has it: the factory's first,
then the call's. A required argument the fixture does not give, or a fixture name no signature has, is
refused at once, naming both (a gate that silently dropped an argument would test another call).

Tensors come from the fixture in the gate's dtype and on its device; a factory that takes `dtype=` /
`device=` (as the built-in ones do) is handed them and its module is left as built (the dtype_device class
reads its parameters), any other module is moved with `.to(...)`. A factory
that draws its init at random draws it from a seeded global RNG (`torch.manual_seed(BUILD_SEED)` right
before), so two builds are the same module: the stateless class compares a used module with a fresh one.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch

from fidelity.fixtures import store
from fidelity.gates.declared_signatures import BUILT_BY_THE_LIBRARY, plain, signature_of, signatures
from fidelity.gates.fixture_values import param, value
from fidelity.mechanisms import Mechanism

BUILD_SEED = 14_101
"""The global seed set right before each build of a module: the same seed gives the same init."""
OTHER_SEED = 14_102
"""The seed of the draw that moves the example's inputs to other values (the stateless class's B)."""
OTHER_STEP = 0.125
"""B's inputs are A's moved by OTHER_STEP x (1 + max |A|) x N(0, 1) per entry: other values, same shapes."""


class ExampleMismatch(ValueError):
    """A fixture's names and a mechanism's declared signatures do not fit together."""


@dataclass(frozen=True)
class Example:
    """`mechanism` called on fixture `fixture_id`'s inputs and params (see the module docstring)."""

    mechanism: Mechanism
    fixture_id: str

    def names(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(inputs, params) of the fixture, by name: inputs as tensors are made per dtype, so here raw."""
        data = store.load_shared(self.fixture_id)
        return dict(data.get("inputs", {})), dict(data.get("params", {}))

    def arguments(self, sig: inspect.Signature, dtype: torch.dtype, device: str, *, other: bool = False,
                  defaults: str = "omit", override: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The arguments of `sig` the fixture gives (tensors in `dtype` on `device`; moved off the example when
        `other`), then `override`. An argument with a default: given from the fixture (`defaults="omit"` leaves
        it out when the fixture has none), left out (`"drop"`), or the interface's default written out (`"state"`)."""
        inputs, params = self.names()
        given: dict[str, Any] = {}
        for p in sig.parameters.values():
            if p.name in BUILT_BY_THE_LIBRARY or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            optional = p.default is not inspect.Parameter.empty
            if optional and defaults == "drop":
                continue
            if optional and defaults == "state":
                given[p.name] = p.default
            elif p.name in inputs:
                given[p.name] = self._tensor(p.name, dtype, device, other)
            elif p.name in params:
                given[p.name] = param(self.fixture_id, p.name)
            elif not optional:
                raise ExampleMismatch(f"fixture {self.fixture_id!r} gives no value for {p.name!r}, a required "
                                      f"argument of {self.mechanism.name}{plain(sig)}: add it to the fixture's inputs "
                                      "or params")
        given.update(override or {})
        return given

    def check_names(self, also: tuple[str, ...] = ()) -> None:
        """ExampleMismatch naming every fixture input or param no declared signature of the mechanism takes
        (nor `also`): a name the gate would silently drop is a call other than the one the fixture means."""
        taken = {name for sig in signatures(self.mechanism) for name in sig.parameters} | set(also)
        inputs, params = self.names()
        unknown = sorted((set(inputs) | set(params)) - taken)
        if unknown:
            raise ExampleMismatch(f"fixture {self.fixture_id!r} names {unknown}, which no signature of "
                                  f"{self.mechanism.name!r} takes ({', '.join(sorted(taken))}): rename them to the "
                                  "interface's argument names")

    def _tensor(self, name: str, dtype: torch.dtype, device: str, other: bool) -> torch.Tensor:
        t = value(self.fixture_id, name, torch.float64)
        if other:
            g = torch.Generator().manual_seed(OTHER_SEED)
            scale = 1 + (float(t.abs().max()) if t.numel() else 0.0)
            t = t + OTHER_STEP * scale * torch.randn(t.shape, generator=g, dtype=torch.float64)
        return t.to(dtype=dtype, device=device)


def call(fn: Callable, sig: inspect.Signature, arguments: Mapping[str, Any]) -> Any:
    """fn(...) with `arguments` placed as `sig` declares: positionally up to the first one left out, then by
    keyword (a subject may name its positional arguments otherwise than the Protocol does)."""
    args, kwargs, gap = [], {}, False
    for p in sig.parameters.values():
        if p.name not in arguments:
            gap = gap or p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and not gap:
            args.append(arguments[p.name])
        else:
            kwargs[p.name] = arguments[p.name]
    return fn(*args, **kwargs)


def build(mechanism: Mechanism, factory: Callable, arguments: Mapping[str, Any], dtype: torch.dtype,
          device: str) -> torch.nn.Module:
    """factory(arguments) at BUILD_SEED, in `dtype` on `device`: handed to a factory whose interface takes them,
    and then left as the factory built it (moving it would hide a factory that drops its dtype=); a module whose
    factory takes neither is moved with .to()."""
    sig = signature_of(mechanism.interface)
    taken = {name: given for name, given in (("dtype", dtype), ("device", device)) if name in sig.parameters}
    torch.manual_seed(BUILD_SEED)
    module = call(factory, sig, {**arguments, **taken})
    moved = {name: given for name, given in (("dtype", dtype), ("device", device)) if name not in taken}
    return module.to(**moved) if moved else module
