"""Which mechanisms exist: ours, those installed packages declare, and those a project names.

Mechanisms are open: a package declares one with an entry point of the group
`fidelity.mechanisms` whose name is the mechanism's name,

    [project.entry-points."fidelity.mechanisms"]
    my_op = "my_pkg.fidelity_mechanism:MECHANISM"

and a project may name more by reference (`module:object`, passed as extra_refs). A
mechanism name is declared once: two declarations of one name are an error, never a silent
override.
"""
from __future__ import annotations

import inspect
import typing
from importlib.metadata import entry_points
from typing import Iterable, Mapping, Sequence

from fidelity import references

from .mechanism import Mechanism

BUILTIN: tuple[str, ...] = tuple(
    f"fidelity.mechanisms.{name}:MECHANISM"
    for name in ("depth_attention", "sinkhorn", "block_attnres", "mhc_residual", "hyper_connection", "loop_model",
                 "mhc_stack", "hc_stack")
)
ENTRY_POINT_GROUP = "fidelity.mechanisms"


class MechanismLoadError(Exception):
    """A mechanism reference that does not resolve to a Mechanism, or a name declared twice."""


def load_mechanism(ref: str) -> Mechanism:
    """'package.module:OBJECT' -> the Mechanism it names; MechanismLoadError naming the reference and why otherwise."""
    try:
        obj = references.resolve(ref)
    except references.UnresolvedReference as exc:
        raise MechanismLoadError(f"mechanism reference {exc} (e.g. my_pkg.fidelity_mechanism:MECHANISM)") from None
    if not isinstance(obj, Mechanism):
        raise MechanismLoadError(f"mechanism reference {ref!r} is a {type(obj).__name__}, not a "
                                 "fidelity.mechanisms.Mechanism")
    return obj


def _declarations(extra_refs: Sequence[str]) -> Iterable[tuple[str, str, str | None]]:
    """(origin, reference, required name) in precedence order: built-ins, entry points, extra references."""
    for ref in BUILTIN:
        yield "built-in", ref, None
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        dist = getattr(ep, "dist", None)
        origin = f"entry point {ep.name!r}" + (f" of {dist.name}" if dist is not None else "")
        yield origin, ep.value, ep.name
    for ref in extra_refs:
        yield "reference", ref, None


def known_mechanisms(extra_refs: Sequence[str] = ()) -> dict[str, Mechanism]:
    """Every mechanism: the built-ins, installed entry points (group `fidelity.mechanisms`), then `extra_refs`.

    MechanismLoadError for a reference that does not resolve, an entry point whose name is not
    its mechanism's, or one name declared by two different references.
    """
    if isinstance(extra_refs, str):
        raise TypeError("extra_refs is a sequence of references; wrap a single one in a list")
    found: dict[str, Mechanism] = {}
    where: dict[str, str] = {}
    for origin, ref, required_name in _declarations(extra_refs):
        mechanism = load_mechanism(ref)
        if required_name is not None and mechanism.name != required_name:
            raise MechanismLoadError(f"{origin} ({ref!r}) declares a mechanism named {mechanism.name!r}; "
                                     f"name the entry point {mechanism.name!r}")
        previous = found.get(mechanism.name)
        if previous is not None and previous is not mechanism:
            raise MechanismLoadError(f"mechanism {mechanism.name!r} is declared twice: by {where[mechanism.name]} "
                                     f"and by {origin} ({ref!r}); rename one")
        found.setdefault(mechanism.name, mechanism)
        where.setdefault(mechanism.name, f"{origin} ({ref!r})")
    return found


def project_mechanisms(project: object | None = None) -> dict[str, Mechanism]:
    """known_mechanisms with a project's configured references (its `mechanisms` setting, if it has one)."""
    return known_mechanisms(tuple(getattr(project, "mechanisms", None) or ()))


def undeclared_mechanisms(provided: Iterable[str], known: Mapping[str, Mechanism] | None = None) -> list[str]:
    """The mechanism names in `provided` (e.g. a Subject's `mechanisms`) that no known Mechanism declares, sorted.

    Subjects may name any mechanism; a caller reports these (a subject that provides an
    undeclared mechanism is held to no documented interface and no gate asks for it).
    """
    known = known_mechanisms() if known is None else known
    return sorted(set(provided) - set(known))


def declaration_problems(subject, known: Mapping[str, Mechanism]) -> list[str]:
    """What is wrong with a subject's mechanisms against their declarations, one sentence each: names no
    declaration knows, callables whose shape their mechanism refuses, and a capability that says the
    subject lacks an input the mechanism's interface does not take as optional."""
    found = [undeclared_problem(name, known) for name in undeclared_mechanisms(subject.mechanisms, known)]
    for name, impl in sorted(subject.mechanisms.items()):
        mechanism = known.get(name)
        if mechanism is None:
            continue
        problem = mechanism.factory_problem(impl) if mechanism.factory_problem is not None else None
        if problem:
            found.append(f"mechanism {name!r}: {problem}")
        optional = optional_inputs(mechanism.interface)
        for lacked in getattr(subject.capabilities.get(name), "lacks", ()):
            if lacked not in optional:
                found.append(f"mechanism {name!r}: Capability.lacks names {lacked!r}, which is not an optional "
                             f"input of its interface (optional inputs, tensors whose default is None: "
                             f"{', '.join(sorted(optional)) or 'none'}); an option the package cannot take a value "
                             f"of is refused with NotRun(reason) when that value is given")
    return found


def optional_inputs(interface: type) -> set[str]:
    """The optional inputs of an interface's __call__, the only names Capability.lacks may give: tensor
    arguments whose default is None ("not given", e.g. depth attention's gain). An option with a default
    (a flag such as learned_gain, a convention, a generator or a device) is not one: a gate passes its
    value, and a package that cannot take a value refuses it with NotRun."""
    hints = typing.get_type_hints(interface.__call__)
    return {p.name for p in inspect.signature(interface.__call__).parameters.values()
            if p.default is None and _is_tensor_or_none(hints.get(p.name))}


def _is_tensor_or_none(hint) -> bool:
    """Whether a type hint is `Tensor | None` (or a Tensor subclass | None)."""
    import torch  # here: reading the registry needs no torch

    args = typing.get_args(hint)
    return (type(None) in args and len(args) == 2
            and all(a is type(None) or (isinstance(a, type) and issubclass(a, torch.Tensor)) for a in args))


def undeclared_problem(name: str, known: Mapping[str, Mechanism]) -> str:
    """What to say of a subject that provides `name`, which no known Mechanism declares."""
    return (f"provides mechanism {name!r}, which no declared mechanism names (declared: {', '.join(sorted(known))}); "
            f"declare it in the project's `mechanisms` setting or fix the name")
