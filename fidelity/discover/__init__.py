"""Blind-spot discovery: mutants of a module's source made by operators for numerical tensor code.

`generate(source)` returns the mutants every operator in `OPERATORS` makes, each one contiguous span
of the source replaced (`Mutant.source` is the whole mutated text), and counts those dropped because
they do not compile, change nothing, or repeat another operator's source.
"""
from __future__ import annotations

from fidelity.discover.operators import DROP_REASONS, OPERATORS, GenerateResult, Mutant, Operator, apply, generate

__all__ = ["DROP_REASONS", "OPERATORS", "GenerateResult", "Mutant", "Operator", "apply", "generate"]
