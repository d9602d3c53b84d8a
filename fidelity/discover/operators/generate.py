"""Generate a module's mutants, keeping only those that compile and change something."""
from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

from fidelity.discover.mutant import Mutant
from fidelity.discover.operators._base import Context, Operator
from fidelity.discover.operators.registry import OPERATORS

__all__ = ["DROP_REASONS", "GenerateResult", "generate"]

# why a generated mutant is not kept: its source does not compile; it parses to the original's AST
# (a literal rewritten in another spelling, a swap of equal texts); another operator made the same source
DROP_REASONS = ("does_not_compile", "no_change", "duplicate")


@dataclass(frozen=True)
class GenerateResult:
    mutants: list[Mutant]
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))


def generate(source: str, operators: Iterable[str | Operator] | None = None) -> GenerateResult:
    """The mutants of `source` by the named operators (all by default), in source order."""
    chosen = list(OPERATORS.values()) if operators is None else [_operator(o) for o in operators]
    tree = ast.parse(source)
    ctx = Context(tree, source)
    segments = _TopLevel(tree, source)
    kept: list[Mutant] = []
    seen: set[str] = set()
    dropped = dict.fromkeys(DROP_REASONS, 0)
    for rank, mutant in sorted(_all_mutants(ctx, chosen), key=lambda pair: (pair[1].start, pair[1].end, pair[0])):
        mutated = mutant.source
        reason = _drop_reason(mutant, mutated, segments, seen)
        if reason:
            dropped[reason] += 1
        else:
            seen.add(mutated)
            kept.append(mutant)
    return GenerateResult(mutants=kept, dropped=dropped)


def _operator(entry: str | Operator) -> Operator:
    if isinstance(entry, Operator):
        return entry
    if entry not in OPERATORS:
        raise KeyError(f"unknown mutation operator {entry!r}; known: {', '.join(OPERATORS)}")
    return OPERATORS[entry]


def _all_mutants(ctx: Context, operators: list[Operator]) -> list[tuple[int, Mutant]]:
    # the rank breaks ties between operators at one span: the registry's order decides who keeps a duplicate
    return [(rank, m) for rank, op in enumerate(operators) for m in op.mutants_in(ctx)]


def _drop_reason(mutant: Mutant, mutated: str, segments: "_TopLevel", seen: set[str]) -> str | None:
    if mutated in seen:
        return "duplicate"
    if mutant.replacement == mutant.original or _same_expression(mutant.original, mutant.replacement):
        return "no_change"
    before, after = segments.around(mutant)
    try:
        compile(after, "<mutant>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return "does_not_compile"
    if _parses(mutant.original) is None and ast.dump(ast.parse(after)) == ast.dump(ast.parse(before)):
        return "no_change"  # a span that is no expression (" + b", two statements): compare whole statements
    return None


class _TopLevel:
    """The module's top-level statements as character spans. A mutant changes text inside the
    top-level statements its span overlaps, so compiling those alone (a def with its decorators,
    a class, an assignment) decides whether it compiles, as the whole module would: the scope
    rules compile checks (return, nonlocal, await) do not reach past a top-level statement.
    Compiling a 3,500-line module once per mutant took a minute for one file."""

    def __init__(self, tree: ast.Module, source: str):
        starts = [0]
        for line in source.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        self.source = source
        self.spans = []
        for stmt in tree.body:
            first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
            self.spans.append((starts[first - 1], starts[min(stmt.end_lineno, len(starts) - 1)]))

    def around(self, mutant: Mutant) -> tuple[str, str]:
        """(original, mutated) text of the top-level statements the mutant touches; the whole
        module when it touches none of them (a span between statements)."""
        touched = [(a, b) for a, b in self.spans if a < mutant.end and mutant.start < b]
        if not touched:
            return self.source, mutant.source
        start, end = touched[0][0], touched[-1][1]
        if not (start <= mutant.start and mutant.end <= end):
            return self.source, mutant.source
        before = self.source[start:end]
        return before, self.source[start:mutant.start] + mutant.replacement + self.source[mutant.end:end]


def _same_expression(original: str, replacement: str) -> bool:
    """Both spans are expressions with one AST (`1.` and `1.0`): the module's AST is unchanged.

    Dumping the spans, not the module, keeps the check cheap for the common case of a literal.
    """
    before, after = _parses(original), _parses(replacement)
    return before is not None and after is not None and before == after


def _parses(text: str) -> str | None:
    try:
        return ast.dump(ast.parse(text.strip(), mode="eval"))
    except SyntaxError:
        return None
