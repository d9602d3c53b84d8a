"""What it means to run a mutant's code: the runner's `reach` for one mutated span.

A test that never executes the mutated code behaves exactly as it does on the original, so it
cannot tell them apart; a mutant need only run the instances that reach its code (the runner
keeps those, from the lines each instance executed in the baseline), and a mutant no instance
reaches needs no child at all (equivalence decides it). What "reach" means depends on where
the span lies:

  inside a function body   the smallest statement around the span executed (its header only,
                           for an if / for / while / with / try: its body lines are statements
                           of their own): {"lines": [first, last]}
  in a function's header   a default, an annotation, a decorator: they take effect when the
                           function is called: {"call": first line of its code object (the
                           first decorator's line when it has one)}; a nested function's header
                           runs when its enclosing function runs, as a statement of it
  anywhere else            module or class level, run at import by every instance: None
"""
from __future__ import annotations

import ast

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def reach_of(tree: ast.Module, first: int, last: int) -> dict | None:
    """The reach of the span on lines [first, last] of the module parsed as `tree`."""
    function = None  # the innermost function whose BODY holds the span
    header_of = None  # the innermost function whose HEADER holds the span
    for node in ast.walk(tree):
        if isinstance(node, _FUNCTIONS):
            body_first = node.body[0].lineno
            if body_first <= first and last <= node.end_lineno:
                if function is None or node.lineno > function.lineno:
                    function = node
            elif _start(node) <= first and last < body_first:
                if header_of is None or node.lineno > header_of.lineno:
                    header_of = node
        elif isinstance(node, ast.Lambda) and node.body.lineno <= first and last <= node.body.end_lineno:
            if function is None or node.lineno > function.lineno:
                function = node
    if header_of is not None and (function is None or header_of.lineno > function.lineno):
        if function is None:  # a module- or class-level function: its header acts at each call
            return {"call": _start(header_of)}
        return {"lines": [_start(header_of), header_of.body[0].lineno - 1]}  # a nested def statement
    if function is None:
        return None
    if isinstance(function, ast.Lambda):
        return {"lines": [function.body.lineno, function.body.end_lineno]}
    statement = _innermost_statement(function.body, first, last)
    if statement is None:  # the span covers several statements (two assignments swapped)
        return {"lines": [first, last]}
    body = _first_child_line(statement)
    if body is not None and last < body:
        return {"lines": [_start(statement), body - 1]}
    return {"lines": [_start(statement), statement.end_lineno]}


def _start(node) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def _innermost_statement(body: list, first: int, last: int):
    for statement in body:
        if _start(statement) <= first and last <= statement.end_lineno:
            if isinstance(statement, _FUNCTIONS) or isinstance(statement, ast.ClassDef):
                return statement
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = _innermost_statement(getattr(statement, field, None) or [], first, last)
                if inner is not None:
                    return inner
            if isinstance(statement, ast.Match):
                for case in statement.cases:
                    inner = _innermost_statement(case.body, first, last)
                    if inner is not None:
                        return inner
            return statement
    return None


def _first_child_line(statement) -> int | None:
    """The first line of a compound statement's first inner statement (None for a simple one)."""
    lines = [s.lineno for field in ("body", "orelse", "finalbody", "handlers")
             for s in (getattr(statement, field, None) or [])[:1]]
    if isinstance(statement, ast.Match):
        lines += [c.pattern.lineno for c in statement.cases[:1]]
    return min(lines) if lines else None
