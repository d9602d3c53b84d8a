"""The verdict over all records: which are current, which gates they accept, which perturbations
they catch. `fidelity check` and `fidelity report` both read it from here, so they cannot disagree.

A gate is ACCEPTED with at least one current record that accepts it (EvidenceRecord.accepted);
a perturbation is CAUGHT by every gate one of its current records accepts.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

from fidelity.evidence.record import EvidenceRecord
from fidelity.evidence.staleness import ProjectNow, staleness

NOT_IN_SPECS = "perturbation no longer in the specs"


@dataclass(frozen=True)
class Judged:
    """A record and why it is stale (nothing: it is current)."""
    record: EvidenceRecord
    stale_reasons: tuple[str, ...]

    @property
    def current(self) -> bool:
        return not self.stale_reasons

    @property
    def accepts(self) -> bool:
        """This record accepts its gate: it is current, and accepts it."""
        return self.current and self.record.accepted


def judge(records: list[EvidenceRecord], repo_root: str | os.PathLike,
          perturbations: Mapping[str, Mapping] | None = None) -> list[Judged]:
    """Each record with its staleness; with `perturbations` (id -> its spec data), a record of an id
    not among them, or whose edits changed, is stale."""
    out, now = [], ProjectNow(repo_root)
    for rec in records:
        if perturbations is not None and rec.perturbation not in perturbations:
            reasons = [NOT_IN_SPECS]
        else:
            reasons = staleness(rec, repo_root, None if perturbations is None else perturbations[rec.perturbation], now)
        out.append(Judged(rec, tuple(reasons)))
    return out


@dataclass
class GateVerdict:
    """What a gate's records say: accepted, by which perturbations, and the records that do not count."""
    accepted: bool = False
    by: list[Judged] = field(default_factory=list)         # current and accepting
    not_red: list[Judged] = field(default_factory=list)    # current, not red by assertion with green after
    stale: list[Judged] = field(default_factory=list)


def by_gate(judged: list[Judged]) -> dict[str, GateVerdict]:
    """gate -> its verdict, over every gate with a record (a gate with none is not accepted)."""
    out: dict[str, GateVerdict] = {}
    for j in judged:
        v = out.setdefault(j.record.gate, GateVerdict())
        if not j.current:
            v.stale.append(j)
        elif j.accepts:
            v.accepted = True
            v.by.append(j)
        else:
            v.not_red.append(j)
    return dict(sorted(out.items()))


def caught_by(judged: list[Judged], perturbation_ids) -> dict[str, list[str]]:
    """perturbation -> the gates whose current records accept them under it (sorted)."""
    out: dict[str, list[str]] = {pid: [] for pid in perturbation_ids}
    for j in judged:
        if j.accepts:
            out.setdefault(j.record.perturbation, []).append(j.record.gate)
    return {pid: sorted(gates) for pid, gates in out.items()}
