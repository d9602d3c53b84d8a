"""Input-validation guards: the error-handling contract of a module.

A guard is an `if` whose body raises, or an `assert`. Weakening one lets a bad input through;
tightening one refuses a good input. Either is a blind spot if no gate notices.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from fidelity.discover.mutant import Mutant
from fidelity.discover.operators._base import Context, Operator, call_name

__all__ = ["CheckCallRemoved", "GuardBoolSwapped", "GuardBoundaryMoved", "GuardRemoved"]

_BOOL_KEYWORD = re.compile(r"\b(and|or)\b")
_ORDER_OPERATOR = re.compile(r"<=|>=|<|>")
_BOOL_SWAPS = {"and": "or", "or": "and"}
_BOUNDARY_MOVES = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}


def guards(ctx: Context) -> Iterator[ast.If | ast.Assert]:
    for node in ctx.nodes:
        if isinstance(node, ast.Assert) or (
            isinstance(node, ast.If) and any(isinstance(stmt, ast.Raise) for stmt in node.body)
        ):
            yield node


def _token_in_gap(ctx: Context, start: int, end: int, pattern: re.Pattern[str]) -> re.Match[str] | None:
    """The first match of an operator between two operands, not inside a comment."""
    for match in pattern.finditer(ctx.source, start, end):
        line_start = ctx.source.rfind("\n", 0, match.start()) + 1
        if "#" not in ctx.source[max(line_start, start):match.start()]:
            return match
    return None


class GuardBoolSwapped(Operator):
    """Swap `or` and `and` in the condition of a guard (an `if` that raises, or an `assert`):
    `if x.dim() < 2 or x.shape[-1] != n: raise` to `... and ...`. Models a validation that accepts
    inputs bad in one way only, or refuses good ones."""

    name = "guard_bool_swapped"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for guard in guards(ctx):
            for node in ast.walk(guard.test):
                if isinstance(node, ast.BoolOp):
                    yield from self._swapped(ctx, node)

    def _swapped(self, ctx: Context, node: ast.BoolOp) -> Iterator[Mutant]:
        matches = [
            _token_in_gap(ctx, ctx.span(left)[1], ctx.span(right)[0], _BOOL_KEYWORD)
            for left, right in zip(node.values, node.values[1:])
        ]
        if None in matches:
            return
        start, end = matches[0].start(), matches[-1].end()
        pieces, cursor = [], start
        for match in matches:
            pieces += [ctx.source[cursor:match.start()], _BOOL_SWAPS[match.group()]]
            cursor = match.end()
        keyword = matches[0].group()
        yield ctx.mutant(self.name, start, end, "".join(pieces), f"{keyword} -> {_BOOL_SWAPS[keyword]}")


class GuardBoundaryMoved(Operator):
    """Move the boundary of an order comparison in a guard's condition: `<` <-> `<=`, `>` <-> `>=`
    (`if t_max < 0: raise` to `if t_max <= 0: raise`). Models an off-by-one in what the validation
    accepts: the edge value (0 iterations, n = 1) refused or let through."""

    name = "guard_boundary_moved"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for guard in guards(ctx):
            for node in ast.walk(guard.test):
                if isinstance(node, ast.Compare):
                    yield from self._moved(ctx, node)

    def _moved(self, ctx: Context, node: ast.Compare) -> Iterator[Mutant]:
        operands = [node.left, *node.comparators]
        for left, op, right in zip(operands, node.ops, operands[1:]):
            if not isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                continue
            match = _token_in_gap(ctx, ctx.span(left)[1], ctx.span(right)[0], _ORDER_OPERATOR)
            if match:
                new = _BOUNDARY_MOVES[match.group()]
                a, b = ctx.text(left), ctx.text(right)
                description = f"{a} {match.group()} {b} -> {a} {new} {b}"
                yield ctx.mutant(self.name, match.start(), match.end(), new, description)


class GuardRemoved(Operator):
    """Remove a guard entirely: an `if ...: raise ...` without an `else`, or an `assert`, becomes `pass`.
    Models a validation never written: the bad input is accepted and fails later, or silently."""

    name = "guard_removed"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for guard in guards(ctx):
            start, _ = ctx.span(guard)
            if isinstance(guard, ast.If) and (guard.orelse or not ctx.source.startswith("if", start)):
                continue  # an `elif` or an `if` with an else branch is more than a guard
            condition = " ".join(ctx.text(guard.test).split())
            keyword = "assert" if isinstance(guard, ast.Assert) else "if"
            yield ctx.replace_node(self.name, guard, "pass", f"guard `{keyword} {condition}` removed")


class CheckCallRemoved(Operator):
    """Remove a validation call statement: `self._check_state(x)`, `check_inputs(...)`,
    `validate(...)` (a call whose name starts with check or validate, its value unused) becomes `pass`.
    Models a validation skipped on one path of the code."""

    name = "check_call_removed"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            if isinstance(node, ast.Expr) and _is_check(call_name(node.value)):
                yield ctx.replace_node(self.name, node, "pass", f"call `{' '.join(ctx.text(node).split())}` removed")


def _is_check(name: str | None) -> bool:
    return name is not None and name.lstrip("_").lower().startswith(("check", "validate"))
