"""Which subjects exist, and which of them provide a mechanism.

Gates never name a subject: they ask the registry for every subject that
provides their mechanism, so a new subject plugs in here without touching a gate.

The project's own subjects (its `subjects` setting; in this repository the PyTorch
reference and the Triton kernels) run in every gate run; each reports itself unavailable, with the reason, when its package
or device is missing. Someone else's implementation runs only when asked for, so
its deviations are findings about it, never failures of our CI:
- by name: an adapter to a public package (ADAPTERS), or an entry point of the
  group `fidelity.subjects` of any installed distribution
  (`[project.entry-points."fidelity.subjects"] mine = "my_pkg.fidelity_subject:SUBJECT"`);
- or by reference, `module:object`.
`fidelity check --subject X` resolves X and passes it to the gate run through the
environment: FIDELITY_SUBJECTS (comma-separated `module:object` references to add)
and FIDELITY_ONLY_SUBJECTS (comma-separated names the run is restricted to).
"""
from __future__ import annotations

import os
from functools import lru_cache
from importlib.metadata import entry_points

from fidelity import references
from fidelity.subjects.subject import Subject

ADAPTERS: dict[str, str] = {
    "hyper-connections": "fidelity.adapters.hyper_connections:SUBJECT",
    "hyper-connections-log": "fidelity.adapters.hyper_connections:LOG_DOMAIN_SUBJECT",
    "attn-res": "fidelity.adapters.attn_res:SUBJECT",
    "pot": "fidelity.adapters.pot:SUBJECT",
}
ENTRY_POINT_GROUP = "fidelity.subjects"
EXTRA_ENV = "FIDELITY_SUBJECTS"
ONLY_ENV = "FIDELITY_ONLY_SUBJECTS"


class SubjectLoadError(Exception):
    """A subject reference that does not resolve to a Subject."""



def load_reference(ref: str) -> Subject:
    """'package.module:OBJECT' -> the Subject it names; SubjectLoadError with the reason otherwise.

    OBJECT may be a Subject or a callable that takes no arguments and returns one. Anything
    that goes wrong on the way (the module does not import or raises on import, the name is
    missing, the callable raises or returns something else) is a SubjectLoadError of one line."""
    try:
        obj = references.resolve(ref)
    except references.UnresolvedReference as exc:
        raise SubjectLoadError(str(exc)) from None
    if callable(obj) and not isinstance(obj, Subject):
        try:
            obj = obj()
        except Exception as exc:
            raise SubjectLoadError(f"{ref!r}: calling {ref.partition(':')[2]}() to get a Subject raised "
                                   f"{references.one_line(exc)}; "
                                   "name a fidelity.subjects.subject.Subject, or a function that takes no "
                                   "arguments and returns one") from None
    if not isinstance(obj, Subject):
        raise SubjectLoadError(f"{ref!r} is a {type(obj).__name__}, not a fidelity.subjects.subject.Subject "
                               "(nor a function that takes no arguments and returns one)")
    problems = obj.problems()
    if problems:
        raise SubjectLoadError(f"subject {obj.name!r} ({ref}): {'; '.join(problems)}")
    return obj


def project_references() -> tuple[str, ...]:
    """The current project's own subjects (none outside a project)."""
    from fidelity import project

    here = project.current_or_none()
    return here.subjects if here is not None else ()


def _references() -> list[str]:
    refs = list(project_references())
    refs += [r.strip() for r in os.environ.get(EXTRA_ENV, "").split(",") if r.strip()]
    return list(dict.fromkeys(refs))


def named_references() -> dict[str, str]:
    """Every subject that can be asked for by name: adapters, then installed entry points."""
    named = dict(ADAPTERS)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        named.setdefault(ep.name, f"{ep.module}:{ep.attr}")
    return named


def resolve(name_or_ref: str) -> tuple[str, Subject]:
    """A subject asked for by name or `module:object` -> (reference, Subject); SubjectLoadError if unknown."""
    if ":" in name_or_ref:
        ref = name_or_ref
    else:
        named = named_references()
        ref = named.get(name_or_ref)
        if ref is None:  # the project's own subjects are loaded (torch, triton) only when no name is theirs
            builtin = {load_reference(r).name: r for r in project_references()}
            ref = builtin.get(name_or_ref)
        if ref is None:
            known = ", ".join([*builtin, *named])
            raise SubjectLoadError(f"no subject named {name_or_ref!r}; known: {known}; or give module:object")
    return ref, load_reference(ref)


@lru_cache(maxsize=None)
def _load_all(refs: tuple[str, ...], only: tuple[str, ...]) -> tuple[Subject, ...]:
    subjects: dict[str, Subject] = {}
    for ref in refs:
        subject = load_reference(ref)
        if subject.name in subjects:
            raise SubjectLoadError(f"two subjects are named {subject.name!r} (the second from {ref!r})")
        subjects[subject.name] = subject
    if only:
        unknown = sorted(set(only) - set(subjects))
        if unknown:
            raise SubjectLoadError(f"unknown subject(s) {', '.join(unknown)}; known: {', '.join(subjects)}")
        subjects = {k: v for k, v in subjects.items() if k in only}
    return tuple(subjects.values())


def all_subjects() -> list[Subject]:
    only = tuple(n.strip() for n in os.environ.get(ONLY_ENV, "").split(",") if n.strip())
    return list(_load_all(tuple(_references()), only))


def availability() -> list[dict]:
    """Every subject of this process, whether it can run here, and why not, sorted by name. Asked
    where the gates run (the gate child writes it into its results): what decides it, such as
    TRITON_INTERPRET or a visible CUDA device, is that process's, never the renderer's."""
    out = []
    for s in all_subjects():
        reason = s.unavailable_reason()
        out.append({"name": s.name, "description": s.description, "available": reason is None, "reason": reason})
    return sorted(out, key=lambda s: s["name"])


def subjects_for(mechanism: str) -> list[Subject]:
    return [s for s in all_subjects() if s.supports(mechanism)]
