"""What the runner refuses, read from the evidence: a perturbation's listed gates.

`fidelity perturb` exits 1 when a gate a perturbation lists does not go red under it by its own
assertion (with green after and its clean runs), and 2 when a perturbation lists or predicts a gate
the suite does not have. A gate another perturbation accepts is still refused here: accepted
somewhere is not red where the spec says it must be. check judges every perturbation of the specs
against its current records by `refusals`, so it enforces what the runner enforces.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from fidelity.evidence.record import CLEAN_RUNS
from fidelity.evidence.verdict import Judged


@dataclass(frozen=True)
class Refusal:
    """One listed (or predicted) gate of one perturbation that the runner would refuse, and why."""
    perturbation: str
    gate: str
    why: str            # "unknown gate" | "no current record" | the current record's outcome in words
    evidence_current: bool  # the gate's record under the perturbation is current: re-running changes nothing

    def sentence(self) -> str:
        if self.why == "unknown gate":
            return (f"perturbation {self.perturbation} names gate {self.gate}, which the gate suite does not "
                    f"have (`fidelity perturb {self.perturbation}` exits 2): correct the name in its spec")
        if not self.evidence_current:
            return (f"perturbation {self.perturbation} lists gate {self.gate}, which has no current record under "
                    f"it: run `fidelity perturb {self.perturbation}`")
        return (f"perturbation {self.perturbation} lists gate {self.gate}, whose current record under it reads "
                f"{self.why} (a listed gate must go red by its own assertion, green after, with {CLEAN_RUNS} clean "
                f"runs: `fidelity perturb {self.perturbation}` exits 1): strengthen the gate or take it off the "
                f"list, then run `fidelity perturb {self.perturbation}`")


def refusals(perturbations: Mapping[str, Mapping], judged: Iterable[Judged],
             known_gates: set[str] | None) -> list[Refusal]:
    """Every listed gate, per perturbation (id -> its spec data), that the runner would refuse; with
    `known_gates` (the suite's gates as collected; None when it could not be collected), every gate a
    perturbation lists or predicts that is not among them."""
    mine: dict[tuple[str, str], Judged] = {}
    for j in judged:
        mine[(j.record.perturbation, j.record.gate)] = j
    out = []
    for pid, p in perturbations.items():
        listed = list(p.get("gates") or [])
        named = listed + [pr["gate"] for pr in p.get("predicted") or [] if pr.get("gate") not in listed]
        for gate in named:
            if known_gates is not None and gate not in known_gates:
                out.append(Refusal(pid, gate, "unknown gate", False))
                continue
            if gate not in listed:
                continue  # a prediction is compared, not required to go red
            j = mine.get((pid, gate))
            if j is None or not j.current:
                out.append(Refusal(pid, gate, "no current record", False))
            elif not j.accepts:
                out.append(Refusal(pid, gate, j.record.shortfall(), True))
    return out

