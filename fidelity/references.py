"""`module:qualname` references (a subject, a mechanism, a claim's oracle, a spec's code location)
resolved to the object they name, with one error that says why in one line."""
from __future__ import annotations

import importlib


class UnresolvedReference(Exception):
    """The reference is malformed, its module does not import, or the name is not in it."""


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def resolve(ref: str) -> object:
    """'package.module:Name.attr' -> the object. Whatever the module raises while importing is
    this reference's error, not the caller's crash."""
    module_name, sep, qualname = ref.partition(":")
    if not sep or not module_name or not qualname:
        raise UnresolvedReference(f"{ref!r} is not of the form module:object")
    try:
        obj = importlib.import_module(module_name)
    except Exception as exc:
        raise UnresolvedReference(f"{ref!r}: module {module_name!r} does not import: "
                                  f"{_raised_where(module_name, exc)}{one_line(exc)}") from None
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UnresolvedReference(f"{ref!r}: module {module_name!r} has no attribute {qualname!r}") from None
    return obj


def _raised_where(module_name: str, exc: BaseException) -> str:
    """'line 25 of adapter.py raised ' when the module's own code raised (a Subject built without an
    argument it needs), so the reader looks at that line, not at the import path; '' when the module
    was not found or raised nowhere in itself."""
    import os
    import traceback

    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_globals.get("__name__") == module_name:
            line = (os.path.basename(frame.f_code.co_filename), lineno)
    return f"line {line[1]} of {line[0]} raised " if line else ""
