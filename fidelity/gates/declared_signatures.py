"""The signatures a mechanism declares: how its callable, or its factory and the module it builds, are called.

Read from the Protocols of its `Mechanism` (fidelity.mechanisms): `interface.__call__` is the function's or the
factory's signature; a module's is its `module_interface`'s `__call__` where declared there, else `forward`.
The gate classes ask them which arguments are optional (fidelity.gates.gate_classes.applies_to), and the
generic gates where each of an example's arguments goes (fidelity.gates.library.example).
"""
from __future__ import annotations

import inspect

BUILT_BY_THE_LIBRARY = ("dtype", "device")
"""Factory keywords a gate fills from its instance (the dtype and device it runs in), never from a default."""


def signature_of(protocol: type, method: str = "__call__") -> inspect.Signature:
    """The declared signature of `protocol.method`, without `self`."""
    sig = inspect.signature(getattr(protocol, method))
    return sig.replace(parameters=list(sig.parameters.values())[1:])


def forward_signature(mechanism) -> inspect.Signature:
    """How the module a factory returns is called: its Protocol's __call__ if declared there, else forward."""
    protocol = mechanism.module_interface
    declared = {name for klass in protocol.__mro__ if klass is not object for name in vars(klass)}
    return signature_of(protocol, "__call__" if "__call__" in declared else "forward")


def signatures(mechanism) -> list[inspect.Signature]:
    """The function's signature; or the factory's, then the built module's."""
    own = [signature_of(mechanism.interface)]
    return own + ([forward_signature(mechanism)] if mechanism.kind == "module" else [])


def optional_names(sig: inspect.Signature) -> list[str]:
    """The arguments of `sig` that have a default, in order (the gate's own dtype/device left out)."""
    return [p.name for p in sig.parameters.values()
            if p.default is not inspect.Parameter.empty and p.name not in BUILT_BY_THE_LIBRARY]


def plain(sig: inspect.Signature) -> str:
    """`sig` without its annotations, as a person reads it in a message: (d, *, eps=1e-08)."""
    return str(sig.replace(parameters=[p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()],
                           return_annotation=inspect.Signature.empty))
