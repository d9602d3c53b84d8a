"""Structural defects: a term dropped, statements or arguments in the wrong order, loop bounds off by one."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from fidelity.discover.mutant import Mutant
from fidelity.discover.operators._base import Context, Operator, call_name, format_number, number_value

__all__ = ["ArgumentsSwapped", "AssignmentsSwapped", "RangeBound", "TermDropped"]

_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_ADDITIVE = (ast.Add, ast.Sub)
_MULTIPLICATIVE = (ast.Mult, ast.Div)
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult)


def _group(node: ast.AST) -> tuple[type, ...] | None:
    if isinstance(node, ast.BinOp):
        for group in (_ADDITIVE, _MULTIPLICATIVE):
            if isinstance(node.op, group):
                return group
    return None


def _is_textual(node: ast.AST) -> bool:
    # `"a" + b` concatenates strings or sequences: not a numeric term
    return isinstance(node, (ast.JoinedStr, ast.List, ast.Tuple)) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )


class TermDropped(Operator):
    """Drop one operand of a sum or a product chain: `a + b + c` to `a + c`, `x * y` to `x` or `y`,
    `a - b` to `-b`, `a / b` to `a` or `1 / b`. Models a term of the paper's equation left out (a bias,
    a residual branch, a normalising factor)."""

    name = "term_dropped"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            if _group(node) and not self._continues_chain(ctx, node):
                operands, ops = self._chain(ctx, node)
                if not any(map(_is_textual, operands)):
                    yield from self._drops(ctx, operands, ops, _group(node))

    @staticmethod
    def _unwrapped(ctx: Context, node: ast.AST) -> bool:
        return ctx.outer_span(node) == ctx.span(node)

    def _continues_chain(self, ctx: Context, node: ast.BinOp) -> bool:
        parent = ctx.parents.get(node)
        return _group(parent) == _group(node) and parent.left is node and self._unwrapped(ctx, node)

    def _chain(self, ctx: Context, node: ast.BinOp) -> tuple[list[ast.AST], list[ast.operator]]:
        """`a - b + c` as ([a, b, c], [-, +]): a left-nested chain of one precedence level."""
        if _group(node.left) == _group(node) and self._unwrapped(ctx, node.left):
            operands, ops = self._chain(ctx, node.left)
        else:
            operands, ops = [node.left], []
        return [*operands, node.right], [*ops, node.op]

    def _drops(self, ctx: Context, operands, ops, group) -> Iterator[Mutant]:
        noun = "term" if group is _ADDITIVE else "factor"
        first, second = ctx.outer_span(operands[0]), ctx.outer_span(operands[1])
        if isinstance(ops[0], ast.Div):  # dropping a numerator leaves its reciprocal
            if number_value(operands[0]) != 1:
                yield ctx.mutant(self.name, *first, "1", f"drop {noun} `{ctx.source[first[0]:first[1]]}`")
        else:
            sign = "-" if isinstance(ops[0], ast.Sub) else ""
            yield ctx.mutant(self.name, first[0], second[0], sign, f"drop {noun} `{ctx.source[first[0]:first[1]]}`")
        for previous, operand, op in zip(operands, operands[1:], ops):
            start, end = ctx.outer_span(previous)[1], ctx.outer_span(operand)[1]
            dropped = f"{_SYMBOLS[type(op)]} {' '.join(ctx.outer_text(operand).split())}"
            yield ctx.mutant(self.name, start, end, "", f"drop {noun} `{dropped}`")


_ASSIGNMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign)


class AssignmentsSwapped(Operator):
    """Swap two consecutive assignment statements of one block (their trailing comments travel with
    them). Models an update applied in the wrong order: a value read before or after it is changed."""

    name = "assignments_swapped"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            for block in _blocks(node):
                for first, second in zip(block, block[1:]):
                    if _is_assignment(first) and _is_assignment(second):
                        yield self._swapped(ctx, first, second)

    def _swapped(self, ctx: Context, first: ast.stmt, second: ast.stmt) -> Mutant:
        (start, first_end), (second_start, end) = _line_segment(ctx, first), _line_segment(ctx, second)
        a, b = ctx.source[start:first_end], ctx.source[second_start:end]
        description = f"swap `{_first_line(ctx.text(first))}` and `{_first_line(ctx.text(second))}`"
        return ctx.mutant(self.name, start, end, b + ctx.source[first_end:second_start] + a, description)


def _blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block


def _is_assignment(stmt: ast.stmt) -> bool:
    return isinstance(stmt, _ASSIGNMENTS) and getattr(stmt, "value", None) is not None


def _line_segment(ctx: Context, stmt: ast.stmt) -> tuple[int, int]:
    """The statement's span, with its trailing comment when nothing else shares its line."""
    start, end = ctx.span(stmt)
    line_end = ctx.end_of_line(end)
    rest = ctx.source[end:line_end].strip()
    return (start, line_end) if not rest or rest.startswith("#") else (start, end)


def _first_line(text: str, width: int = 40) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= width else line[:width - 3] + "..."


_NOT_SWAPPABLE = frozenset({"isinstance", "issubclass", "getattr", "setattr", "hasattr", "super"})
_PLAIN_ARGUMENTS = (ast.Name, ast.Attribute, ast.Subscript)


class ArgumentsSwapped(Operator):
    """Swap two adjacent positional arguments of a call when both are plain names, attributes or
    subscripts: `f(q, k)` to `f(k, q)`. Models two same-typed arguments passed in the wrong order,
    which no type checker notices."""

    name = "arguments_swapped"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            if isinstance(node, ast.Call) and call_name(node) not in _NOT_SWAPPABLE:
                for a, b in zip(node.args, node.args[1:]):
                    if isinstance(a, _PLAIN_ARGUMENTS) and isinstance(b, _PLAIN_ARGUMENTS):
                        yield self._swapped(ctx, node, a, b)

    def _swapped(self, ctx: Context, call: ast.Call, a: ast.AST, b: ast.AST) -> Mutant:
        (start, a_end), (b_start, end) = ctx.span(a), ctx.span(b)
        replacement = ctx.text(b) + ctx.source[a_end:b_start] + ctx.text(a)
        description = f"swap arguments `{ctx.text(a)}`, `{ctx.text(b)}` of {call_name(call) or 'a call'}"
        return ctx.mutant(self.name, start, end, replacement, description)


class RangeBound(Operator):
    """Move a bound of `range()` by one: `range(n)` to `range(n - 1)` and `range(n + 1)`, both ends of
    `range(a, b)`. Models a loop that runs one iteration short or long (t_max - 1 Sinkhorn steps)."""

    name = "range_bound"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
                bounds = node.args[:1] if len(node.args) == 1 else node.args[:2]
                for bound in bounds:
                    if not isinstance(bound, ast.Starred):
                        yield from self._moved(ctx, bound)

    def _moved(self, ctx: Context, bound: ast.AST) -> Iterator[Mutant]:
        text = ctx.text(bound)
        value = number_value(bound)
        for sign, delta in (("-", -1), ("+", 1)):
            if isinstance(value, int):
                new = format_number(value + delta)
            else:
                operand = text if isinstance(bound, _ATOMS) or _is_arithmetic(bound) else f"({text})"
                new = f"{operand} {sign} 1"
            yield ctx.replace_node(self.name, bound, new, f"range bound {text} -> {new}")


def _is_arithmetic(node: ast.AST) -> bool:
    return (isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not)) or (
        isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC)
    )
