"""Numeric literals and the default values of parameters."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from decimal import Decimal

from fidelity.discover.mutant import Mutant
from fidelity.discover.operators._base import Context, Operator, format_number, number_value
from fidelity.discover.operators.activations import activation_factors
from fidelity.discover.operators.axes import axis_literals

__all__ = ["NumericLiteral", "ParameterDefault", "number_replacements"]


def _scaled(value: float, factor: Decimal) -> float:
    # through Decimal so that 1e-06 * 10 reads 1e-05, not 9.999999999999999e-06
    return float(Decimal(repr(value)) * factor)


def number_replacements(value: int | float) -> list[int | float]:
    """Floats: x10, /10, 0, 1, sign flip. Integers: +1, -1, 0. In that order; the filter drops no-ops."""
    if isinstance(value, int):
        return [value + 1, value - 1, 0]
    replacements = [_scaled(value, Decimal(10)), _scaled(value, Decimal("0.1")), 0.0, 1.0]
    return replacements + ([-value] if value != 0 else [])


def _number_text(ctx: Context, node: ast.AST, value: int | float) -> str:
    text = format_number(value)
    parent = ctx.parents.get(node)
    binds_tighter = (isinstance(parent, ast.Attribute) and parent.value is node) or (
        isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Pow) and parent.left is node
    )
    return f"({text})" if value < 0 and binds_tighter else text


def number_mutants(ctx: Context, operator: str, node: ast.AST, label: str = "") -> Iterator[Mutant]:
    """The mutants of one numeric literal; `label` prefixes both sides of the description (`eps=`)."""
    original = ctx.text(node)
    for value in number_replacements(number_value(node)):
        text = _number_text(ctx, node, value)
        yield ctx.replace_node(operator, node, text, f"{label}{original} -> {label}{text}")


def parameter_defaults(node: ast.AST) -> list[tuple[str, ast.expr]]:
    """(parameter name, default expression) of a function or lambda."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip((a.arg for a in positional[len(positional) - len(args.defaults):]), args.defaults))
    pairs += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return pairs


def _default_nodes(ctx: Context) -> set[ast.AST]:
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    return {d for n in ctx.nodes if isinstance(n, functions) for _, d in parameter_defaults(n)}


class NumericLiteral(Operator):
    """Change a numeric literal in the code: a float x10, /10, to 0, to 1 or sign-flipped; an integer +1, -1
    or to 0. Models a mistyped constant, a wrong scale or epsilon, an off-by-one size. Axes (see
    `dim_argument`), factors in front of an activation (see `activation_factor`) and parameter defaults
    (see `parameter_default`) are left to their own operators."""

    name = "numeric_literal"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        owned = _default_nodes(ctx) | axis_literals(ctx) | activation_factors(ctx)
        for node in ctx.nodes:
            if node in owned or number_value(node) is None or _is_sign_operand(ctx, node):
                continue
            yield from number_mutants(ctx, self.name, node)


def _is_sign_operand(ctx: Context, node: ast.AST) -> bool:
    # `-1` is one literal: mutate the UnaryOp, not the constant under its minus
    return number_value(ctx.parents.get(node)) is not None


class ParameterDefault(Operator):
    """Change the default value of a function parameter: numbers as in `numeric_literal` (`eps=1e-6` to
    1e-05, 1e-07, 0, ...), booleans flipped. Models a wrong default that every caller passing the value
    explicitly (as test suites do) never sees."""

    name = "parameter_default"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for param, default in parameter_defaults(node):
                    yield from self._default_mutants(ctx, param, default)

    def _default_mutants(self, ctx: Context, param: str, default: ast.expr) -> Iterator[Mutant]:
        if number_value(default) is not None:
            yield from number_mutants(ctx, self.name, default, label=f"{param}=")
        elif isinstance(default, ast.Constant) and isinstance(default.value, bool):
            flipped = str(not default.value)
            yield ctx.replace_node(self.name, default, flipped, f"{param}={default.value} -> {param}={flipped}")
