"""Which subjects exist, and which of them provide a mechanism.

Gates never name a subject: they ask the registry for every subject that
provides their mechanism, so a new subject (Triton kernels, an adapter to a
public package) plugs in here without touching a gate.
"""
from __future__ import annotations

import importlib

from fidelity.subjects.subject import Subject

# module:attribute of every built-in subject, in report order.
BUILTIN = ("fidelity.subjects.torch_reference:SUBJECT",)


def _load(ref: str) -> Subject:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def all_subjects() -> list[Subject]:
    return [_load(ref) for ref in BUILTIN]


def subjects_for(mechanism: str) -> list[Subject]:
    return [s for s in all_subjects() if s.supports(mechanism)]
