"""Which subjects exist, and which of them provide a mechanism.

Gates never name a subject: they ask the registry for every subject that
provides their mechanism, so a new subject plugs in here without touching a gate.

Subjects come from three places, in this order:
1. the built-in ones (BUILTIN): our PyTorch reference, our Triton kernels, and the
   adapters to public packages (each reports itself unavailable, with the reason,
   when its package or device is missing);
2. the entry-point group `fidelity.subjects` of any installed distribution
   (`[project.entry-points."fidelity.subjects"] mine = "my_pkg.fidelity_subject:SUBJECT"`);
3. the environment variable FIDELITY_SUBJECTS: comma-separated `module:object`
   references (what `fidelity check --subject module:object` sets for its child).
FIDELITY_ONLY_SUBJECTS (comma-separated names) restricts the run to those subjects.
"""
from __future__ import annotations

import importlib
import os
from functools import lru_cache
from importlib.metadata import entry_points

from fidelity.subjects.subject import Subject

BUILTIN: tuple[str, ...] = (
    "fidelity.subjects.torch_reference:SUBJECT",
)
ENTRY_POINT_GROUP = "fidelity.subjects"
EXTRA_ENV = "FIDELITY_SUBJECTS"
ONLY_ENV = "FIDELITY_ONLY_SUBJECTS"


class SubjectLoadError(Exception):
    """A subject reference that does not resolve to a Subject."""


def load_reference(ref: str) -> Subject:
    """'package.module:OBJECT' -> the Subject it names; SubjectLoadError with the reason otherwise."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise SubjectLoadError(f"{ref!r} is not of the form module:object")
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise SubjectLoadError(f"{ref!r} does not import: {type(exc).__name__}: {exc}") from None
    if callable(obj) and not isinstance(obj, Subject):
        obj = obj()
    if not isinstance(obj, Subject):
        raise SubjectLoadError(f"{ref!r} is a {type(obj).__name__}, not a fidelity.subjects.Subject")
    return obj


def _references() -> list[str]:
    refs = list(BUILTIN)
    refs += [f"{ep.module}:{ep.attr}" for ep in entry_points(group=ENTRY_POINT_GROUP)]
    refs += [r.strip() for r in os.environ.get(EXTRA_ENV, "").split(",") if r.strip()]
    return list(dict.fromkeys(refs))


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


def subjects_for(mechanism: str) -> list[Subject]:
    return [s for s in all_subjects() if s.supports(mechanism)]
