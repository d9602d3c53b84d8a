"""What a subject says its default is, for a gate's message about a default it compares.

A gate that holds a default to the spec's value (a tier-c choice of ours, e.g. attnres.eps) names both
values when it fails: ours from the spec, theirs from the callable's signature where it states one
(`inspect.signature` follows `functools.wraps`, so an adapter or our output contract in between is seen
through). A default computed inside the body (torch's `eps=None` meaning finfo(dtype).eps) is reported as
the signature gives it, never guessed.
"""
from __future__ import annotations

import inspect
from typing import Callable


def declared_default(fn: Callable, name: str) -> str:
    """The default of `fn`'s parameter `name` as text, or why there is none to show."""
    try:
        parameter = inspect.signature(fn).parameters.get(name)
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return "not stated (no signature)"
    if parameter is None:
        return f"not stated (its signature has no {name!r})"
    if parameter.default is inspect.Parameter.empty:
        return f"none ({name!r} is required)"
    return repr(parameter.default)
