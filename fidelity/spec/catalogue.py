"""All loaded specs as one catalogue of items addressable by id."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Item:
    """One paper, equation, claim or perturbation, with where it was written."""

    kind: str          # "paper" | "equation" | "claim" | "perturbation"
    id: str
    paper: str         # the paper id it belongs to
    data: dict
    file: Path
    line: int | None

    def get(self, key, default=None):
        return self.data.get(key, default)


@dataclass
class Catalogue:
    specs_dir: Path
    files: list[Path] = field(default_factory=list)
    papers: dict[str, Item] = field(default_factory=dict)
    equations: dict[str, Item] = field(default_factory=dict)
    claims: dict[str, Item] = field(default_factory=dict)
    perturbations: dict[str, Item] = field(default_factory=dict)

    def by_kind(self, kind: str) -> dict[str, Item]:
        return {"paper": self.papers, "equation": self.equations,
                "claim": self.claims, "perturbation": self.perturbations}[kind]

    def get(self, item_id: str) -> Item | None:
        for table in (self.papers, self.equations, self.claims, self.perturbations):
            if item_id in table:
                return table[item_id]
        return None

    def all_ids(self) -> list[str]:
        return [*self.papers, *self.equations, *self.claims, *self.perturbations]

    def equations_of(self, paper: str) -> list[Item]:
        return [e for e in self.equations.values() if e.paper == paper]


def perturbation_order(pid: str) -> tuple:
    """Sort key of perturbation ids: P<n> in numeric order (P3 before P12), then the others by name."""
    return (0, int(pid[1:]), "") if re.fullmatch(r"P\d+", pid) else (1, 0, pid)
