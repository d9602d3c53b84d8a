"""Activations swapped, and the factor in front of one changed."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from fidelity.discover.mutant import Mutant
from fidelity.discover.operators._base import Context, Operator, format_number, number_value
from fidelity.discover.operators.axes import is_namespace, rename_attribute

__all__ = ["ActivationFactor", "ActivationSwap", "activation_factors"]

_TORCH = ("sigmoid", "tanh", "exp", "relu")
# the activations each namespace has under these names (there is no F.exp, no np.sigmoid)
_BY_NAMESPACE = {"torch": _TORCH, "F": ("relu", "sigmoid", "tanh"), "functional": ("relu", "sigmoid", "tanh"),
                 "np": ("exp", "tanh"), "numpy": ("exp", "tanh"), "math": ("exp", "tanh")}


def _namespace_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def activation_choices(node: ast.AST) -> tuple[str, ...]:
    """The activations a call could have been (its own name included); () if it is not an activation."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return ()
    func = node.func
    if is_namespace(func.value) or _namespace_name(func.value) == "math":
        choices = _BY_NAMESPACE.get(_namespace_name(func.value), ())
    else:  # a method: x.sigmoid()
        choices = _TORCH if not node.args and not node.keywords else ()
    return choices if func.attr in choices else ()


class ActivationSwap(Operator):
    """Swap an activation for another: sigmoid, tanh, exp and relu among each other, as `torch.` and `F.`
    functions or tensor methods (`.sigmoid()`, `.exp()`). Models the wrong nonlinearity in a gate or a
    weight (a tanh where the paper has a sigmoid), which near zero can look almost right."""

    name = "activation_swap"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            for other in activation_choices(node):
                if other != node.func.attr:
                    yield rename_attribute(ctx, self.name, node.func, other)


def _factor_of_activation(node: ast.AST) -> ast.AST | None:
    """The numeric literal `c` of `c * act(x)` or `act(x) * c`."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return None
    for factor, other in ((node.left, node.right), (node.right, node.left)):
        if number_value(factor) is not None and activation_choices(other):
            return factor
    return None


def activation_factors(ctx: Context) -> set[ast.AST]:
    return {f for f in map(_factor_of_activation, ctx.nodes) if f is not None}


class ActivationFactor(Operator):
    """Change the constant multiplying an activation to 1 or to twice its value: `2.0 * torch.sigmoid(x)`
    to `1.0 * ...` and `4.0 * ...`. Models a gate's range dropped or doubled (mHC's H_post = 2 sigma)."""

    name = "activation_factor"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for factor in sorted(activation_factors(ctx), key=ctx.span):
            value = number_value(factor)
            one = 1 if isinstance(value, int) else 1.0
            for new in (one, 2 * value):
                text = format_number(new)
                yield ctx.replace_node(self.name, factor, text, f"factor {ctx.text(factor)} -> {text}")
