"""Which lines of some source files ran, and which of their functions were called, while active.

    with LinesExecuted([path]) as trace:
        ...
    trace.lines[path], trace.calls[path]   # line numbers; first lines of the code objects called

The runner's coverage of each gate instance: the plugin records it under
`--fidelity-trace-lines`, so a mutant runs only the instances that executed its lines. (The
equivalence probes of discovery still keep a tracer of their own, which also reads a call's
arguments to tell whether a mutated default was left in force; the two should become one.) Only
frames of the wanted files are traced line by line; every other frame returns at its call
event. Threads started while active are traced too (threading.settrace).
"""
from __future__ import annotations

import os
import sys
import threading


class LinesExecuted:
    def __init__(self, paths):
        self._wanted = {os.path.realpath(p): p for p in paths}
        self._known: dict[str, str | None] = {}  # co_filename -> the wanted path it is, or None
        self.lines: dict[str, set[int]] = {p: set() for p in self._wanted.values()}
        self.calls: dict[str, set[int]] = {p: set() for p in self._wanted.values()}

    def _path_of(self, filename: str) -> str | None:
        try:
            return self._known[filename]
        except KeyError:
            found = self._known[filename] = self._wanted.get(os.path.realpath(filename))
            return found

    def _global(self, frame, event, arg):
        path = self._path_of(frame.f_code.co_filename)
        if path is None:
            return None
        self.calls[path].add(frame.f_code.co_firstlineno)
        lines = self.lines[path]

        def local(frame, event, arg):
            if event == "line":
                lines.add(frame.f_lineno)
            return local
        return local

    def __enter__(self) -> "LinesExecuted":
        self._previous = sys.gettrace()
        threading.settrace(self._global)
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._previous)
        threading.settrace(self._previous)

    def to_json(self) -> dict:
        return {p: {"lines": sorted(self.lines[p]), "calls": sorted(self.calls[p])} for p in self.lines}


def reaches(executed: dict | None, reach: dict | None) -> bool:
    """Whether code that executed `executed` (LinesExecuted.to_json()[path]) ran what `reach`
    describes: {"lines": [first, last]} a line in that range ran; {"call": line} the function
    whose code starts at that line was called; None (module-level code) always."""
    if reach is None:
        return True
    if not executed:
        return False
    if "call" in reach:
        return reach["call"] in executed["calls"]
    first, last = reach["lines"]
    return any(first <= n <= last for n in executed["lines"])
