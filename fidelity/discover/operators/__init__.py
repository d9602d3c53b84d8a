"""The mutation operators of `fidelity discover`, by family, in one registry.

Each operator has a `name`, a `doc` (what it changes and which real defect that models) and
`mutants(tree, source)`, which yields `Mutant`s: one contiguous span of the source replaced.
`generate(source)` runs them all and keeps the mutants that compile and change something.
"""
from __future__ import annotations

from fidelity.discover.mutant import Mutant, apply
from fidelity.discover.operators._base import Context, Operator
from fidelity.discover.operators.generate import DROP_REASONS, GenerateResult, generate
from fidelity.discover.operators.registry import OPERATORS

__all__ = ["DROP_REASONS", "OPERATORS", "Context", "GenerateResult", "Mutant", "Operator", "apply", "generate"]
