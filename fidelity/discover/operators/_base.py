"""What every operator shares: source positions, the nodes worth mutating, and the Operator base.

AST positions are (1-based line, UTF-8 byte column); a mutant needs character offsets into the
source string, so `Context` converts once per line. `Context.nodes` is every node in source order
except those in places no realistic defect lives: docstrings, f-strings, type annotations, the
arguments of a `raise` and the message of an `assert`.
"""
from __future__ import annotations

import ast
import bisect
import inspect
import re
from collections.abc import Iterator

from fidelity.discover.mutant import Mutant

__all__ = ["Context", "Operator", "call_name", "number_value", "format_number"]

_NEWLINE = re.compile(r"\r\n|\r|\n")  # the line ends ast counts (not str.splitlines' \x0c, \x1c, ...)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Context:
    """One module's source and tree, with the lookups every operator needs."""

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.tree, self.source = tree, source
        self._line_starts = [0] + [m.end() for m in _NEWLINE.finditer(source)]
        self.parents: dict[ast.AST, ast.AST] = {}
        self.nodes: list[ast.AST] = []
        self._function_starts: list[int] = []
        self._functions: list[tuple[int, int, str]] = []  # (start, end, dotted name), by start
        self._visit(tree, scope=())

    # --- positions -------------------------------------------------------------------

    def offset(self, lineno: int, col_bytes: int) -> int:
        start = self._line_starts[lineno - 1]
        line = self.source[start:self._line_starts[lineno] if lineno < len(self._line_starts) else None]
        if line.isascii():
            return start + col_bytes
        return start + len(line.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._line_starts, offset)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset))

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def outer_span(self, node: ast.AST) -> tuple[int, int]:
        """The node's span widened over the parentheses that wrap it, `(a + b)` for the node `a + b`."""
        start, end = self.span(node)
        source = self.source
        while True:
            before, after = start, end
            while before > 0 and source[before - 1].isspace():
                before -= 1
            while after < len(source) and source[after].isspace():
                after += 1
            if not (before > 0 and source[before - 1] == "(" and source[after:after + 1] == ")"):
                return start, end
            start, end = before - 1, after + 1

    def outer_text(self, node: ast.AST) -> str:
        start, end = self.outer_span(node)
        return self.source[start:end]

    def end_of_line(self, offset: int) -> int:
        """Offset of the line end (before the newline) of the line holding `offset`."""
        match = _NEWLINE.search(self.source, offset)
        return match.start() if match else len(self.source)

    # --- the mutant ------------------------------------------------------------------

    def function_at(self, offset: int) -> str | None:
        """Dotted name of the innermost function whose `def ...` span holds `offset`."""
        index = bisect.bisect_right(self._function_starts, offset)
        for start, end, name in reversed(self._functions[:index]):
            if start <= offset < end:
                return name
        return None

    def mutant(self, operator: str, start: int, end: int, replacement: str, description: str) -> Mutant:
        return Mutant(
            operator=operator,
            line=self.line_of(start),
            end_line=self.line_of(max(start, end - 1)),
            start=start,
            end=end,
            original=self.source[start:end],
            replacement=replacement,
            description=description,
            function=self.function_at(start),
            original_source=self.source,
        )

    def replace_node(self, operator: str, node: ast.AST, replacement: str, description: str) -> Mutant:
        return self.mutant(operator, *self.span(node), replacement, description)

    # --- the walk --------------------------------------------------------------------

    def _visit(self, node: ast.AST, scope: tuple[str, ...]) -> None:
        self.nodes.append(node)
        if isinstance(node, (ast.JoinedStr, ast.Raise)):
            return  # f-string text and error messages are not numerics
        if isinstance(node, (ast.ClassDef, *_FUNCTIONS)):
            scope = (*scope, node.name)
            if isinstance(node, _FUNCTIONS):
                self._add_function(node, ".".join(scope))
        for child in self._children(node):
            self.parents[child] = node
            self._visit(child, scope)

    def _add_function(self, node: ast.AST, name: str) -> None:
        start, end = self.span(node)
        index = bisect.bisect_right(self._function_starts, start)
        self._function_starts.insert(index, start)
        self._functions.insert(index, (start, end, name))

    @staticmethod
    def _children(node: ast.AST) -> Iterator[ast.AST]:
        body = getattr(node, "body", None)
        documented = isinstance(node, (ast.Module, ast.ClassDef, *_FUNCTIONS)) and _is_docstring(body)
        docstring = body[0] if documented else None
        for name, value in ast.iter_fields(node):
            if _is_annotation_field(node, name) or (isinstance(node, ast.Assert) and name == "msg"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST) and child is not docstring:
                    yield child


def _is_docstring(body: list[ast.stmt]) -> bool:
    first = body[0] if body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def _is_annotation_field(node: ast.AST, name: str) -> bool:
    return (
        (isinstance(node, ast.arg) and name == "annotation")
        or (isinstance(node, _FUNCTIONS) and name == "returns")
        or (isinstance(node, ast.AnnAssign) and name == "annotation")
    )


class Operator:
    """Base of every operator: a `name`, a `doc` (the class docstring) and `mutants(tree, source)`."""

    name: str = ""

    @property
    def doc(self) -> str:
        return inspect.cleandoc(type(self).__doc__ or "")

    def mutants(self, tree: ast.Module, source: str) -> Iterator[Mutant]:
        return self.mutants_in(Context(tree, source))

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<operator {self.name}>"


# --- small readers of the tree --------------------------------------------------------


def call_name(call: ast.AST) -> str | None:
    """The called name: `sum` for `x.sum(...)` and `torch.sum(...)`, `f` for `f(...)`."""
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def number_value(node: ast.AST) -> int | float | None:
    """The value of a numeric literal, `-1` included (a unary minus on a constant); None otherwise."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = number_value(node.operand)
        if inner is None or not isinstance(node.operand, ast.Constant):
            return None
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def format_number(value: int | float) -> str:
    """Source text for a number: `1e-05`, `0.1`, `-2`."""
    return repr(value)
