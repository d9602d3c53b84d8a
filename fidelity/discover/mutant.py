"""A mutant: one contiguous span of a module's source replaced by new text."""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Mutant", "apply"]


@dataclass(frozen=True)
class Mutant:
    """One small defect of a module's source, as a single replaced span."""

    operator: str          # the operator's name, e.g. "dim_argument"
    line: int              # 1-based line where the replaced span starts
    end_line: int          # 1-based line where it ends
    start: int             # character offset of the replaced span in the original source
    end: int               # end offset (exclusive)
    original: str          # source[start:end]
    replacement: str       # what replaces it
    description: str       # one line a person reads: "dim=-1 -> dim=-2"
    function: str | None   # dotted name of the enclosing function ("MhcResidual.forward"), None at module level
    original_source: str = field(default="", repr=False)  # the whole unmutated module source

    @property
    def source(self) -> str:
        """The whole mutated source."""
        return apply(self.original_source, self)


def apply(source: str, mutant: Mutant) -> str:
    """`source` with the mutant's span replaced; the span must still hold the mutant's original text."""
    if source[mutant.start:mutant.end] != mutant.original:
        raise ValueError(f"{mutant.operator} at line {mutant.line}: the span no longer holds {mutant.original!r}")
    return source[:mutant.start] + mutant.replacement + source[mutant.end:]
