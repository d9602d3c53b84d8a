"""What a value that feeds an output can lose on the way: its gradient, or its precision."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from fidelity.discover.mutant import Mutant
from fidelity.discover.operators._base import Context, Operator, call_name, number_value
from fidelity.discover.operators.axes import rename_attribute

__all__ = ["DetachInserted", "DowncastInserted", "DtypeNarrowed", "output_values"]

_NOT_TENSORS = (
    ast.Constant, ast.JoinedStr, ast.Compare, ast.BoolOp, ast.Dict, ast.List, ast.Set, ast.Tuple,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda,
)
_NON_TENSOR_BUILTINS = frozenset({
    "dict", "list", "tuple", "set", "frozenset", "len", "range", "zip", "enumerate", "int", "float", "str",
    "bool", "isinstance", "sorted", "reversed", "getattr", "type", "repr", "print", "super", "iter", "next",
})
_NON_TENSOR_METHODS = frozenset({"dim", "size", "numel", "item", "tolist", "stride"})
_NON_TENSOR_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad"})
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)
_NARROWER = {"float64": "float32", "double": "float32", "float32": "float16", "float": "float16"}


def _maybe_tensor(node: ast.AST) -> bool:
    """False for what is visibly not a tensor: literals, containers, tests, strings, constructors, shapes."""
    if isinstance(node, (*_NOT_TENSORS, ast.Starred)) or number_value(node) is not None:
        return False
    if isinstance(node, ast.Subscript):
        node = node.value  # x.shape[-1] is an int
    if isinstance(node, ast.Attribute) and node.attr in _NON_TENSOR_ATTRIBUTES:
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return False
    name = call_name(node)
    if name is None:
        return True
    # constructors (nn.Parameter, ValueError), builtins, shape queries and validators return no tensor
    is_check = name.lstrip("_").startswith(("check", "validate"))
    return not (name in _NON_TENSOR_BUILTINS or name in _NON_TENSOR_METHODS or name[:1].isupper() or is_check)


def output_values(ctx: Context) -> Iterator[ast.AST]:
    """The values a `return` or an assignment hands on; each element of a tuple on its own."""
    for node in ctx.nodes:
        if isinstance(node, ast.Return) and node.value is not None:
            yield from _elements(node.value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            unpacks = any(isinstance(t, (ast.Tuple, ast.List)) for t in targets)
            if isinstance(node.value, ast.Tuple) and unpacks:
                # `self.n, self.eps = n, eps` stores configuration: its bare names are rarely tensors
                yield from (v for v in _elements(node.value) if not isinstance(v, ast.Name))
            elif not unpacks:  # `a, b = f()`: f's tuple cannot be cast
                yield from _elements(node.value)


def _elements(value: ast.AST) -> Iterator[ast.AST]:
    values = value.elts if isinstance(value, ast.Tuple) else [value]
    yield from (v for v in values if _maybe_tensor(v))


def _suffixed(ctx: Context, operator: str, node: ast.AST, suffix: str, description: str) -> Mutant:
    start, end = ctx.outer_span(node)
    text = ctx.source[start:end]
    wrapped = (start, end) != ctx.span(node)
    replacement = f"{text}{suffix}" if wrapped or isinstance(node, _ATOMS) else f"({text}){suffix}"
    return ctx.mutant(operator, start, end, replacement, description.format(" ".join(text.split())))


class DetachInserted(Operator):
    """Append `.detach()` to a value that is returned or assigned (`return out` to
    `return out.detach()`, `g = expr` to `g = (expr).detach()`). Models a gradient path cut: the
    forward value is right, the gradient through it is zero."""

    name = "detach_inserted"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for value in output_values(ctx):
            yield _suffixed(ctx, self.name, value, ".detach()", "detach `{}`")


class DowncastInserted(Operator):
    """Append `.float()` to a value that is returned or assigned. Models a silent cast to float32
    in a float64 computation (an intermediate held in a narrower dtype than its inputs)."""

    name = "downcast_inserted"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for value in output_values(ctx):
            yield _suffixed(ctx, self.name, value, ".float()", "downcast `{}` to float32")


class DtypeNarrowed(Operator):
    """Narrow a floating dtype named in the code: `torch.float64` (or `torch.double`) to
    `torch.float32`, `torch.float32` (or `torch.float`) to `torch.float16`, in arguments and defaults
    alike. Models an accumulator or a default dtype one precision too low."""

    name = "dtype_narrowed"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            if (
                isinstance(node, ast.Attribute) and node.attr in _NARROWER
                and isinstance(node.value, ast.Name) and node.value.id == "torch"
            ):
                yield rename_attribute(ctx, self.name, node, _NARROWER[node.attr])
