"""The names a gate marker gives must be declared somewhere: a typo is a collection error, never a gate
that quietly runs nothing.

`@pytest.mark.gate(equations=[...], mechanism=..., gate_class=...)`: a mechanism nobody declares had no
subject, so every instance was skipped ("no subject provides ...") and `check` counted 0 gates red; an
unknown gate class dropped the gate from the ledger's coverage table. Each unknown name is refused at
collection (pytest_plugin.pytest_generate_tests), naming the gate, the name, and the closest declared names.

Declared: a mechanism by fidelity.mechanisms.registry (built-ins, entry points, the project's `mechanisms`);
a gate class by gate_classes.GATE_CLASSES; an equation by the project's specs. A gate process reads the
equation ids from the specs' kept values (fidelity.spec.values.equation_ids: kept in the project's cache
under a hash of every spec file, so no catalogue is loaded after the first process). Where no project is
known (pytest run outside one), or its specs folder is missing or does not load, equations are not checked
here: `fidelity check` stops at its specs stage when they do not load, and its gates stage names any
equation no spec defines.
"""
from __future__ import annotations

from difflib import get_close_matches
from functools import lru_cache
from typing import Iterable


class UnknownMarkerName(ValueError):
    """A gate marker names a mechanism, gate class or equation that nothing declares."""


def closest_names(name: str, declared: Iterable[str], shown: int = 12) -> str:
    """'closest declared: a, b' (difflib's nearest), else 'none is close; declared: ...' (at most `shown`)."""
    declared = sorted(set(declared))
    near = get_close_matches(name, declared, n=3, cutoff=0.6)
    if near:
        return f"closest declared: {', '.join(near)}"
    listed = ", ".join(declared[:shown]) + (f", ... ({len(declared)} in all)" if len(declared) > shown else "")
    return f"none is close; declared: {listed or 'none'}"


def check_mechanism(name: str | None, where: str) -> None:
    """UnknownMarkerName when `name` is given and no declaration (the current project's included) names it."""
    if name is None:
        return
    declared = declared_mechanisms(_project_mechanism_refs())
    if name not in declared:
        raise UnknownMarkerName(f"{where}: mechanism {name!r} is declared by no one ({closest_names(name, declared)}); "
                                "fix the name, or declare the mechanism in the project's `mechanisms` setting")


def check_equations(names: Iterable[str], where: str) -> None:
    """UnknownMarkerName naming every equation in `names` that the current project's specs do not define."""
    names = list(names)
    declared = _project_equations() if names else None
    if declared is None:
        return
    unknown = [n for n in names if n not in declared]
    if unknown:
        raise UnknownMarkerName(f"{where}: " + "; ".join(f"equation {n!r} is defined by no spec "
                                                         f"({closest_names(n, declared)})" for n in unknown)
                                + "; fix the name (`fidelity list equations` lists them)")


def marker_equations(marker) -> list[str]:
    """The equations a `gate` marker names: `equations=` or its first argument, a string or a list."""
    given = marker.kwargs.get("equations", marker.args[0] if marker.args else None)
    if given is None:
        return []
    return [given] if isinstance(given, str) else [str(e) for e in given]


def _project_mechanism_refs() -> tuple[str, ...]:
    from fidelity import project

    here = project.current_or_none()
    return tuple(getattr(here, "mechanisms", None) or ())


@lru_cache(maxsize=None)
def declared_mechanisms(refs: tuple[str, ...]) -> frozenset[str]:
    """The names of every mechanism declared: built-in, by an installed entry point, or by `refs` (a project's)."""
    from fidelity.mechanisms.registry import known_mechanisms

    return frozenset(known_mechanisms(tuple(refs)))


def _project_equations() -> frozenset[str] | None:
    """The equation ids of the current project's specs; None when no project is known or its specs do not load."""
    from fidelity import project

    here = project.current_or_none()
    return None if here is None else _equations_in(str(here.specs))


@lru_cache(maxsize=None)
def _equations_in(specs: str) -> frozenset[str] | None:
    """Once per process and specs folder: a gate file's every gate asks."""
    from fidelity.spec.errors import SpecError
    from fidelity.spec.values import equation_ids

    try:
        return equation_ids(specs)
    except (SpecError, OSError):  # no specs folder, or specs that do not load
        return None
