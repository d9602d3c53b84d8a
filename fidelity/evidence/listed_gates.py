"""What the runner refuses, read from the evidence: a perturbation's listed gates.

`fidelity perturb` exits 1 when a gate a perturbation lists does not go red under it by its own
assertion (with green after and its clean runs), and 2 when a perturbation lists or predicts a gate
the suite does not have. A gate another perturbation accepts is still refused here: accepted
somewhere is not red where the spec says it must be.

This is the one home of that judgement of the records against today's specs: check judges every
perturbation of the specs by `refusals`, and `fidelity perturb --stale` judges each perturbation whose
records it keeps (not re-run) by `refusals_of`, so a kept record is RED in both or in neither.

A record stands for a listed gate only if the gate ran under the perturbation AS a listed gate: one that
ran as a covering gate, before the spec listed it, is not the listed gate's record (the spec changed
since), so the perturbation runs again under --stale and is then judged by its own verdict.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from fidelity.evidence.record import CLEAN_RUNS
from fidelity.evidence.verdict import Judged


LISTED_SINCE = "ran as a covering gate, before the spec listed it"


@dataclass(frozen=True)
class Refusal:
    """One listed (or predicted) gate of one perturbation that the runner would refuse, and why."""
    perturbation: str
    gate: str
    why: str            # "unknown gate" | "no current record" | LISTED_SINCE | the current record's outcome in words
    evidence_current: bool  # the gate's record under the perturbation is current: re-running changes nothing

    def sentence(self) -> str:
        if self.why == "unknown gate":
            return (f"perturbation {self.perturbation} names gate {self.gate}, which the gate suite does not "
                    f"have (`fidelity perturb {self.perturbation}` exits 2): correct the name in its spec")
        if self.why == LISTED_SINCE:
            return (f"perturbation {self.perturbation} lists gate {self.gate}, whose record under it {LISTED_SINCE}: "
                    f"run `fidelity perturb {self.perturbation}` (or `fidelity perturb --stale`)")
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
    mine: dict[str, dict[str, Judged]] = {}
    for j in judged:
        mine.setdefault(j.record.perturbation, {})[j.record.gate] = j
    out = []
    for pid, p in perturbations.items():
        predicted = [pr["gate"] for pr in p.get("predicted") or []]
        out += refusals_of(pid, p.get("gates") or [], predicted, mine.get(pid, {}), known_gates)
    return out


def refusals_of(perturbation: str, listed: Iterable[str], predicted: Iterable[str], judged: Mapping[str, Judged],
                known_gates: set[str] | None) -> list[Refusal]:
    """What the runner refuses of one perturbation: `listed` and `predicted`, the gates today's spec lists and
    predicts; `judged`, gate -> its record under the perturbation, judged now."""
    listed = list(listed)
    out = []
    for gate in listed + [g for g in predicted if g not in listed]:
        if known_gates is not None and gate not in known_gates:
            out.append(Refusal(perturbation, gate, "unknown gate", False))
            continue
        if gate not in listed:
            continue  # a prediction is compared, not required to go red
        j = judged.get(gate)
        if j is None or not j.current:
            out.append(Refusal(perturbation, gate, "no current record", False))
        elif not j.record.listed:
            out.append(Refusal(perturbation, gate, LISTED_SINCE, False))
        elif not j.accepts:
            out.append(Refusal(perturbation, gate, j.record.shortfall(), True))
    return out
