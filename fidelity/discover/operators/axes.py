"""Axes, transposes and reductions: the wrong-dimension defects of tensor code."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from fidelity.discover.mutant import Mutant
from fidelity.discover.operators._base import Context, Operator, format_number, number_value

__all__ = ["DimArgument", "KeywordFlag", "ReductionSwap", "TransposeInserted", "TransposeRemoved", "axis_literals"]

_AXIS_KEYWORDS = frozenset({"dim", "axis", "dims", "dim0", "dim1", "start_dim", "end_dim"})
# method name -> positions of its axis arguments in the method form `x.name(...)`; the function form
# `torch.name(x, ...)` has them one later
_AXIS_POSITIONS: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(
        ("sum", "mean", "prod", "nansum", "nanmean", "amax", "amin", "argmax", "argmin", "max", "min",
         "logsumexp", "softmax", "log_softmax", "cumsum", "cumprod", "var", "std", "all", "any",
         "unsqueeze", "squeeze", "size", "cat", "concat", "concatenate", "stack"),
        (0,),
    ),
    **dict.fromkeys(("transpose", "swapaxes", "swapdims", "movedim", "flatten"), (0, 1)),
    **dict.fromkeys(("chunk", "split"), (1,)),
}
_NAMESPACES = frozenset({"torch", "F", "functional", "np", "numpy"})
_TRANSPOSE_ATTRIBUTES = frozenset({"T", "mT", "H", "mH"})
_TRANSPOSE_CALLS = frozenset({"transpose", "swapaxes", "swapdims", "t"})
_REDUCTION_SWAPS = {
    "sum": "mean", "mean": "sum", "nansum": "nanmean", "nanmean": "nansum",
    "max": "min", "min": "max", "amax": "amin", "amin": "amax", "argmax": "argmin", "argmin": "argmax",
    "softmax": "log_softmax", "log_softmax": "softmax",
}


def is_namespace(node: ast.AST) -> bool:
    """`torch`, `F`, `torch.nn.functional`, `np`: a module, not a tensor, before the dot."""
    if isinstance(node, ast.Name):
        return node.id in _NAMESPACES
    return isinstance(node, ast.Attribute) and node.attr in _NAMESPACES


def _int_literal(node: ast.AST) -> bool:
    return isinstance(number_value(node), int)


def _axis_sites(ctx: Context) -> Iterator[tuple[ast.AST, str]]:
    """(int literal used as an axis, its label in a description)."""
    for node in ctx.nodes:
        if isinstance(node, ast.Call):
            yield from _call_axes(node)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            if _int_literal(node.slice):
                yield node.slice, "shape[{}]"


def _call_axes(call: ast.Call) -> Iterator[tuple[ast.AST, str]]:
    for keyword in call.keywords:
        if keyword.arg in _AXIS_KEYWORDS:
            values = keyword.value.elts if isinstance(keyword.value, (ast.Tuple, ast.List)) else [keyword.value]
            yield from ((v, f"{keyword.arg}={{}}") for v in values if _int_literal(v))
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _AXIS_POSITIONS:
        return
    shift = 1 if is_namespace(func.value) else 0
    for position in _AXIS_POSITIONS[func.attr]:
        index = position + shift
        if index < len(call.args) and _int_literal(call.args[index]):
            before = ".., " if index > 0 else ""
            after = ", .." if index < len(call.args) + len(call.keywords) - 1 else ""
            yield call.args[index], f"{func.attr}({before}{{}}{after})"


def axis_literals(ctx: Context) -> set[ast.AST]:
    return {node for node, _ in _axis_sites(ctx)}


def axis_replacements(axis: int) -> list[int]:
    """The neighbouring axes and the other sign: -1 -> -2, 0, 1; 0 -> -1, 1."""
    candidates = [axis - 1, axis + 1, -axis]
    return [c for i, c in enumerate(candidates) if c != axis and c not in candidates[:i]]


class DimArgument(Operator):
    """Move an axis argument to a neighbouring axis or flip its sign: `dim=-1` to `dim=-2`, `dim=0`,
    `dim=1`; positional axes of reductions and softmaxes (`x.sum(-1)`, `torch.cat(xs, 0)`), of
    `transpose`/`unsqueeze`/`size`, and `x.shape[-1]`. Models normalising, reducing or concatenating
    along the wrong axis, the commonest silent defect of batched tensor code."""

    name = "dim_argument"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node, label in _axis_sites(ctx):
            original = ctx.text(node)
            for axis in axis_replacements(number_value(node)):
                text = format_number(axis)
                yield ctx.replace_node(self.name, node, text, f"{label.format(original)} -> {label.format(text)}")


class KeywordFlag(Operator):
    """Flip a boolean keyword argument of a call: `keepdim=True` to `keepdim=False`, `unbiased=False` to
    True. Models a dropped `keepdim` (a broadcast that silently lines up the wrong axes) or a flag set
    the wrong way round."""

    name = "keyword_flag"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            if isinstance(node, ast.keyword) and node.arg and _is_bool(node.value):
                flipped = str(not node.value.value)
                description = f"{node.arg}={node.value.value} -> {node.arg}={flipped}"
                yield ctx.replace_node(self.name, node.value, flipped, description)


def _is_bool(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, bool)


class TransposeRemoved(Operator):
    """Remove a transpose: `x.T`, `x.mT`, `x.transpose(-1, -2)`, `torch.transpose(x, 0, 1)` become `x`.
    Models a forgotten transpose, which square matrices (n x n mixing matrices) never reject."""

    name = "transpose_removed"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            found = _transposed_operand(node)
            if found is None:
                continue
            operand, suffix = found
            if suffix:  # `x.mT`, `x.transpose(..)`: keep x with its parentheses, drop what follows it
                kept, removed = ctx.outer_text(operand), ctx.source[ctx.outer_span(operand)[1]:ctx.span(node)[1]]
            else:  # `torch.transpose(x, ..)`: keep the argument
                kept, removed = ctx.text(operand), ctx.text(node)
            yield ctx.replace_node(self.name, node, kept, f"`{_short(removed)}` removed")


def _transposed_operand(node: ast.AST) -> tuple[ast.AST, bool] | None:
    """(the tensor transposed, whether the transpose follows it as a suffix) for a transpose node."""
    if isinstance(node, ast.Attribute) and node.attr in _TRANSPOSE_ATTRIBUTES and isinstance(node.ctx, ast.Load):
        return node.value, True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _TRANSPOSE_CALLS:
        if not is_namespace(node.func.value):
            return node.func.value, True
        return (node.args[0], False) if node.args else None
    return None


def _short(text: str, width: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


class TransposeInserted(Operator):
    """Transpose one operand of a matrix product: `a @ b` to `a.mT @ b` and to `a @ b.mT`. Models the
    row-versus-column convention mixed up (`H x` against `H^T x`), invisible whenever the matrix is
    symmetric, e.g. at an identity initialisation."""

    name = "transpose_inserted"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                yield from (self._transposed(ctx, operand) for operand in (node.left, node.right))

    def _transposed(self, ctx: Context, operand: ast.AST) -> Mutant:
        start, end = ctx.outer_span(operand)
        text = ctx.source[start:end]
        wrapped = (start, end) != ctx.span(operand)
        replacement = f"{text}.mT" if wrapped or isinstance(operand, _ATOMS) else f"({text}).mT"
        return ctx.mutant(self.name, start, end, replacement, f"{_short(text)} -> {_short(replacement)} in @")


class ReductionSwap(Operator):
    """Swap a reduction for its sibling: sum <-> mean, max <-> min, amax <-> amin, argmax <-> argmin,
    softmax <-> log_softmax, as a method or a `torch.`/`F.` function. Models a normalisation by the
    count forgotten or added, or the wrong extreme taken."""

    name = "reduction_swap"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        for node in ctx.nodes:
            func = getattr(node, "func", None)
            if isinstance(node, ast.Call) and isinstance(func, ast.Attribute) and func.attr in _REDUCTION_SWAPS:
                yield rename_attribute(ctx, self.name, node.func, _REDUCTION_SWAPS[node.func.attr])


def rename_attribute(ctx: Context, operator: str, attribute: ast.Attribute, new: str) -> Mutant:
    """Replace only the name after the dot: the attribute's name ends its span."""
    end = ctx.span(attribute)[1]
    return ctx.mutant(operator, end - len(attribute.attr), end, new, f"{attribute.attr} -> {new}")
