"""Stale evidence, collapsed: after an edit, what failed comes first.

An edit to one module makes every record of every perturbation of that module stale: check used to
print dozens of "not accepted", "no current record" and "caught by no gate" lines for it, after (and
around) the few that really failed. A problem is STALE-CAUSED when a stale record accepted what the
current evidence now lacks (the gate was red by its own assertion under that perturbation when it
ran): re-running that perturbation is the whole fix. Every other problem is a real failure.

The text output shows the real failures first, then ONE line per target module with how many
gates, listed gates, equations and perturbations only stale evidence holds back there, why the
records are stale, and the `fidelity perturb` command that re-runs exactly those perturbations.
--json keeps every problem's sentence, as before, and adds this summary per module.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fidelity.evidence.verdict import Judged
from fidelity.spec.catalogue import perturbation_order

# what each kind of problem is called in a module's line, in the order the line gives them
KINDS = {"gate": ("gate not accepted", "gates not accepted"),
         "listed gate": ("listed gate without a current record", "listed gates without a current record"),
         "equation": ("equation covered by no accepted gate", "equations covered by no accepted gate"),
         "perturbation": ("perturbation caught by no gate", "perturbations caught by no gate")}
REASONS_SHOWN = 2


@dataclass(frozen=True)
class Problem:
    """One problem of the evidence stage: its sentence, and (when stale-caused) its kind and the stale
    records that accepted what is now missing (re-running their perturbations clears it)."""
    text: str
    kind: str = ""
    stale_by: tuple[Judged, ...] = ()

    @property
    def stale(self) -> bool:
        return bool(self.stale_by)


class StaleAcceptances:
    """The stale records that accepted their gate when they ran, looked up by gate and by perturbation."""

    def __init__(self, judged: list[Judged]):
        self.of_gate: dict[str, list[Judged]] = {}
        self.of_perturbation: dict[str, list[Judged]] = {}
        self.of_pair: dict[tuple[str, str], Judged] = {}
        for j in judged:
            if not j.current and j.record.accepted:
                self.of_gate.setdefault(j.record.gate, []).append(j)
                self.of_perturbation.setdefault(j.record.perturbation, []).append(j)
                self.of_pair[(j.record.perturbation, j.record.gate)] = j


def by_module(problems: list[Problem]) -> list[dict]:
    """One entry per target module of a stale-caused problem: {module, counts (kind -> problems), perturbations
    (ids to re-run), reasons (why those records are stale), command}; modules in name order."""
    modules: dict[str, dict] = {}
    for p in problems:
        for module in sorted({j.record.target for j in p.stale_by}):
            m = modules.setdefault(module, {"module": module, "counts": {}, "perturbations": set(), "reasons": []})
            m["counts"][p.kind] = m["counts"].get(p.kind, 0) + 1
            for j in p.stale_by:
                if j.record.target == module:
                    m["perturbations"].add(j.record.perturbation)
                    m["reasons"] += [r for r in j.stale_reasons if r not in m["reasons"]]
    out = []
    for module, m in sorted(modules.items()):
        ids = sorted(m["perturbations"], key=perturbation_order)
        out.append({"module": module, "counts": {k: m["counts"][k] for k in KINDS if k in m["counts"]},
                    "perturbations": ids, "reasons": m["reasons"], "command": f"fidelity perturb {spans(ids)}"})
    return out


def spans(ids: list[str]) -> str:
    """Ids as `fidelity perturb` reads them, three or more consecutive P<n> written as a range (P3..P5)."""
    out: list[str] = []
    run: list[int] = []

    def close() -> None:
        out.extend([f"P{run[0]}..P{run[-1]}"] if len(run) >= 3 else [f"P{n}" for n in run])
        run.clear()

    for pid in ids:
        m = re.fullmatch(r"P(\d+)", pid)
        if m and run and int(m.group(1)) == run[-1] + 1:
            run.append(int(m.group(1)))
            continue
        close()
        if m:
            run.append(int(m.group(1)))
        else:
            out.append(pid)
    close()
    return " ".join(out)


def module_line(m: dict) -> str:
    """A module's one line: what only stale evidence holds back there, why, and what to run."""
    counts = ", ".join(f"{n} {KINDS[k][n != 1]}" for k, n in m["counts"].items())
    reasons = "; ".join(m["reasons"][:REASONS_SHOWN])
    if len(m["reasons"]) > REASONS_SHOWN:
        reasons += f"; and {len(m['reasons']) - REASONS_SHOWN} more"
    return (f"stale evidence of {m['module']} ({reasons}): {counts}, each accepted before its evidence went "
            f"stale; run `{m['command']}`")


def text_lines(problems: list[Problem], limit: int) -> list[str]:
    """The stage's problem lines as the terminal shows them: the real failures first (at most `limit`, then
    how many more), then one line per module of the stale-caused ones."""
    real = [p.text for p in problems if not p.stale]
    lines = real[:limit]
    if len(real) > limit:
        lines.append(f"... and {len(real) - limit} more (`fidelity check --json` lists every one)")
    modules = by_module(problems)
    lines += [module_line(m) for m in modules]
    if len(modules) > 1:
        lines.append(f"stale evidence in {len(modules)} modules: `fidelity perturb --stale` re-runs all of it")
    return lines
