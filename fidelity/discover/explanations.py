"""Blind spots explained in the spec: `equivalent:` and `out_of_scope:` entries of an equation.

    equations:
      - id: mhc.eq9
        ...
        out_of_scope:
          - mutant: fidelity.impl.torch.mhc:3f2a9c1b7d4e
            reason: the error message's wording; no equation fixes it

`mutant` is `module:key` as `fidelity discover` prints it. A blind spot named here is
explained (the check does not fail on it, and the ledger prints the reason); any other
blind spot must be closed by a gate.
"""
from __future__ import annotations

from dataclasses import dataclass

KINDS = ("equivalent", "out_of_scope")


@dataclass(frozen=True)
class Explanation:
    mutant: str     # "module:key"
    kind: str       # "equivalent" | "out_of_scope"
    reason: str
    equation: str   # the equation it sits beside
    paper: str
    where: str      # "specs/mhc.yaml:120"


class DuplicateExplanation(ValueError):
    pass


def from_catalogue(cat) -> dict[str, Explanation]:
    """Every explanation in the specs, by mutant; one mutant explained twice is an error."""
    found: dict[str, Explanation] = {}
    for eq in cat.equations.values():
        for kind in KINDS:
            for entry in eq.data.get(kind, []):
                e = Explanation(entry["mutant"], kind, entry["reason"], eq.id, eq.paper, f"{eq.file}:{eq.line}")
                if e.mutant in found:
                    first = found[e.mutant]
                    raise DuplicateExplanation(f"mutant {e.mutant} is explained twice: beside {first.equation} "
                                               f"({first.where}) and beside {e.equation} ({e.where})")
                found[e.mutant] = e
    return found


def name(module: str, key: str) -> str:
    return f"{module}:{key}"
