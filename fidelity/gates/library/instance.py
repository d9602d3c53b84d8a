"""One gate instance of a generic class: a subject's mechanism, on a device, in a dtype, at the example.

`make()` gives what the subject provides: the function itself, or a module its factory builds (the same
module for every `make()`: fidelity.gates.library.example.build seeds it). `arguments()` gives the call's
arguments, `caller()` a closure that calls a target with them, and `leaves()` the floating inputs and
parameters a gradient class asks about. Every call is first checked against the subject's declared
capability: a dtype or device it does not declare is not run (fidelity.gates.within_capability).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch

from fidelity.gates import within_capability
from fidelity.gates.declared_signatures import signature_of, signatures
from fidelity.gates.library.example import Example, build, call


@dataclass
class Instance:
    """The example of one gate class run on `subject` (checked by the plugin), `device`, `dtype`."""

    example: Example
    subject: Any
    device: str
    dtype: torch.dtype

    @property
    def mechanism(self):
        return self.example.mechanism

    @property
    def is_module(self) -> bool:
        return self.mechanism.kind == "module"

    def call_signature(self):
        """How the target is called: the function's interface, or the built module's."""
        return signatures(self.mechanism)[-1]

    def make(self, defaults: str = "omit", override: Mapping[str, Any] | None = None):
        """The function, or a module built from the factory's arguments in the fixture (`defaults`, `override`:
        as Example.arguments, for the factory's own arguments)."""
        provided = self.subject.get(self.mechanism.name)
        if not self.is_module:
            return provided
        factory_args = self.example.arguments(signature_of(self.mechanism.interface), self.dtype, self.device,
                                              defaults=defaults, override=override)
        within_capability.require(self.capability, self.where, (), dtype=self.dtype, device=self.device)
        return build(self.mechanism, provided, factory_args, self.dtype, self.device)

    def factory_arguments(self) -> dict[str, Any]:
        """The factory's arguments as a build sees them: the interface's defaults, then the fixture's values."""
        sig = signature_of(self.mechanism.interface)
        stated = {p.name: p.default for p in sig.parameters.values() if p.default is not p.empty}
        return {**stated, **self.example.arguments(sig, self.dtype, self.device)}

    def arguments(self, *, other: bool = False, defaults: str = "omit",
                  override: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The call's arguments (Example.arguments on the call's signature), inside the subject's capability."""
        given = self.example.arguments(self.call_signature(), self.dtype, self.device, other=other,
                                       defaults=defaults, override=override)
        within_capability.require(self.capability, self.where, given, dtype=self.dtype, device=self.device)
        return given

    def caller(self, target, arguments: Mapping[str, Any]) -> Callable[[], Any]:
        """A closure: target called with `arguments` as its declared signature places them."""
        sig = self.call_signature()
        return lambda: call(target, sig, arguments)

    def modules(self, target) -> dict[str, torch.nn.Module]:
        return {self.mechanism.name: target} if isinstance(target, torch.nn.Module) else {}

    def leaves(self, target, arguments: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Every floating tensor argument (made a leaf that requires grad, in place in `arguments`) and every
        parameter of a module target, by name."""
        leaves: dict[str, torch.Tensor] = {}
        for name, given in arguments.items():
            if isinstance(given, torch.Tensor) and given.is_floating_point():
                arguments[name] = leaves[name] = given.detach().clone().requires_grad_(True)
        for name, p in (target.named_parameters() if isinstance(target, torch.nn.Module) else ()):
            leaves[f"{self.mechanism.name}.{name}"] = p
        return leaves

    @property
    def capability(self):
        return self.subject.capabilities.get(self.mechanism.name)

    @property
    def where(self) -> str:
        return f"subject {self.subject.name}'s {self.mechanism.name}"
