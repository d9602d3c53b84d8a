"""What a perturbation run observed: RunResult, its JSON and its table.

`RunResult.to_json()` returns a JSON-ready dict (readings encoded as in
`jsonio`: a non-finite reading is a string); `RunResult.dumps()` is its text.
Observed and predicted readings stay in separate fields everywhere.

An observation (run(observe=True)) expects nothing: its JSON and table report,
per perturbation, which gates went red by assertion, red for another reason,
were skipped or stayed green (RunResult.observed()), with no survivor or miss.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from fidelity.evidence import jsonio
from fidelity.evidence.outcome import Outcome


# the groups of an observation, in the order they are reported; a survived gate is "green"
OBSERVED_GROUPS = ((Outcome.RED_BY_ASSERTION, "red_by_assertion"), (Outcome.RED_OTHER, "red_other"), (Outcome.SKIPPED, "skipped"),
                   (Outcome.SURVIVED, "green"))
OBSERVED_LABELS = {"red_by_assertion": "red by assertion", "red_other": "red for another reason",
                   "skipped": "skipped", "green": "green"}


@dataclass
class GateResult:
    gate: str
    outcome: str                   # red_by_assertion | red_other | survived | skipped
    reading: float | None          # OBSERVED (only for red_by_assertion)
    predicted: dict | None         # {"reading": float, "note": str} from the perturbation, never observed
    listed: bool                   # the perturbation names it as one that must go red
    detail: str = ""
    green_after: bool | None = None
    gate_file: str = ""
    equations: list[str] = field(default_factory=list)
    instances: list[dict] = field(default_factory=list)
    fixtures_read: list[str] = field(default_factory=list)  # relative to the repo root
    kept: bool = False             # a covering gate not run again: its current record's outcome

    def to_json(self) -> dict:
        pred = None
        if self.predicted is not None:
            pred = dict(self.predicted, reading=jsonio.encode_float(self.predicted.get("reading")))
        return {
            "gate": self.gate,
            "outcome": self.outcome,
            "reading": jsonio.encode_float(self.reading),
            "predicted": pred,
            "listed": self.listed,
            "detail": self.detail,
            "green_after": self.green_after,
            "equations": self.equations,
            "kept": self.kept,
        }


@dataclass
class PerturbationResult:
    id: str
    title: str
    target: str
    target_file: str               # the module's environment-free path (locate.module_path)
    spec_file: str | None
    diff: str
    gates: list[str]               # the gates run: covering the target, listed, or predicted
    listed: list[str]
    outcomes: list[GateResult] = field(default_factory=list)
    restored: bool | None = None   # every gate green again without the patch
    status: str = "ran"            # ran | current (stale_only: evidence current, not re-run) | not_run
    child: dict | None = None
    observe: bool = False          # nothing expected: no survivor, no miss (an observation)
    unreached: bool = False        # trace_lines: no instance executed the changed lines, none was run
    refused: list[dict] = field(default_factory=list)  # status current: what check refuses of the kept records

    @property
    def kept_covering(self) -> int:
        """Covering gates not run again: their current records' outcomes are among `outcomes`."""
        return sum(1 for o in self.outcomes if o.kept)

    @property
    def red_by_assertion(self) -> list[str]:
        return [o.gate for o in self.outcomes if o.outcome == Outcome.RED_BY_ASSERTION]

    @property
    def survivor(self) -> bool:
        """No gate went red by its own assertion: a blind spot (an observation has none)."""
        return not self.observe and self.status != "not_run" and not self.red_by_assertion

    @property
    def misses(self) -> list[dict]:
        """Listed (must-go-red) gates that did not go red by assertion, with what they did
        (an observation expects nothing, so it misses nothing)."""
        if self.observe:
            return []
        if self.status == "current":  # kept records: judged by today's spec, as check judges them
            return list(self.refused)
        return [{"gate": o.gate, "outcome": o.outcome, "detail": o.detail}
                for o in self.outcomes if o.listed and o.outcome != Outcome.RED_BY_ASSERTION]

    def observation(self) -> dict:
        """What each gate did under this perturbation, grouped (see OBSERVED_GROUPS), in gate order."""
        out = {"id": self.id, "title": self.title, "target": self.target, "spec_file": self.spec_file,
               "gates_run": len(self.outcomes), "restored": self.restored,
               "patch_served": (self.child or {}).get("patch_served"), "unreached": self.unreached}
        for outcome, key in OBSERVED_GROUPS:
            out[key] = [{"gate": o.gate, "reading": jsonio.encode_float(_observed_reading(o)), "detail": o.detail}
                        for o in self.outcomes if o.outcome == outcome]
        return out

    def summary(self) -> str:
        if self.status == "not_run":
            return "not run"
        if self.observe:
            return self._observed_summary()
        red = self.red_by_assertion
        other = [o for o in self.outcomes if o.outcome == Outcome.RED_OTHER]
        if red:
            s = f"red by assertion ({len(red)} gate{'s' if len(red) != 1 else ''})"
        elif not self.outcomes:
            s = "SURVIVED (no gate covers the target)"
        else:
            s = "SURVIVED (no gate red by assertion)"
        if other:
            s += f"; {len(other)} red for another reason: " + ", ".join(sorted({_short(o.detail) for o in other}))
        if self.child and self.child.get("patch_served") == 0 and self.status == "ran":
            s += "; the patched module was never imported"
        if self.misses:
            s += f"; MISSED {len(self.misses)} listed gate{'s' if len(self.misses) != 1 else ''}"
        if self.restored is False:
            s += "; NOT green again without the patch"
        if self.status == "current":
            s += " [evidence current, not re-run]"
        elif self.kept_covering:
            s += f"; {self.kept_covering} covering gate{'s' if self.kept_covering != 1 else ''} from current records"
        return s

    def _observed_summary(self) -> str:
        if self.unreached:
            return "no gate instance executes the changed lines: none run"
        if not self.outcomes:
            return "no gate covers the target"
        counts = {key: sum(o.outcome == outcome for o in self.outcomes) for outcome, key in OBSERVED_GROUPS}
        s = ", ".join(f"{n} {OBSERVED_LABELS[key]}" for key, n in counts.items() if n or key != "skipped")
        if self.child and self.child.get("patch_served") == 0:
            s += "; the patched module was never imported"
        if self.restored is False:
            s += "; NOT green again without the patch"
        return s

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "target": self.target,
            "target_file": self.target_file,
            "spec_file": self.spec_file,
            "status": self.status,
            "gates": self.gates,
            "listed": self.listed,
            "outcomes": [o.to_json() for o in self.outcomes],
            "restored": self.restored,
            "survivor": self.survivor,
            "misses": self.misses,
            "kept_covering": self.kept_covering,
            "summary": self.summary(),
            "diff": self.diff,
            "child": self.child,
        }


def _observed_reading(o: GateResult) -> float | None:
    """The reading a gate compared: its red instance's, else (green) the first instance's that
    recorded one, so a blind-spot search sees how near a surviving gate came to its bound."""
    if o.reading is not None or o.outcome != Outcome.SURVIVED:
        return o.reading
    for inst in o.instances:
        reading = (inst.get("readings") or {}).get("reading")
        if reading is not None:
            return jsonio.decode_float(reading)
    return None


def _short(detail: str) -> str:
    """A red_other detail in a few words: the exception type, "timeout",
    "crash (exit code N)", "collection error: ImportError", "not collected"."""
    parts = detail.split(": ")
    if len(parts) >= 2 and "::" in parts[0]:   # "<nodeid>: <ExcType>: <message>"
        return parts[1]
    if detail.startswith("collection error") and len(parts) >= 2:
        return f"collection error: {parts[1]}"
    return detail.split(",")[0][:80]


@dataclass
class RunResult:
    ok: bool = False
    error: str | None = None
    error_kind: str | None = None  # invalid | baseline_red | flaky | forced_failure | source_changed
    perturbations: list[PerturbationResult] = field(default_factory=list)
    baseline: dict = field(default_factory=dict)
    forced_failure: dict = field(default_factory=dict)
    green_after: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)  # the evidence files written, one per perturbation
    wall_s: float = 0.0
    observe: bool = False          # an observation: ok means the run itself can be trusted

    @property
    def survivors(self) -> list[str]:
        return [p.id for p in self.perturbations if p.survivor]

    def observed(self) -> list[dict]:
        """Per perturbation, what each gate did (PerturbationResult.observation)."""
        return [p.observation() for p in self.perturbations]

    def compute_ok(self) -> bool:
        if self.observe:  # whatever went red: baseline green, forced failure seen, everything restored
            self.ok = (self.error is None and all(p.status != "not_run" for p in self.perturbations)
                       and all(p.restored is True for p in self.perturbations if p.outcomes))
            return self.ok
        self.ok = (
            self.error is None
            and all(p.status != "not_run" for p in self.perturbations)
            and not self.survivors
            and not any(p.misses for p in self.perturbations)
            and all(p.restored is True for p in self.perturbations if p.outcomes)
        )
        return self.ok

    def to_json(self) -> dict:
        if self.observe:
            return self._observed_json()
        return {
            "ok": self.ok,
            "error": self.error,
            "error_kind": self.error_kind,
            "perturbations": [p.to_json() for p in self.perturbations],
            "survivors": self.survivors,
            "baseline": self.baseline,
            "forced_failure": self.forced_failure,
            "green_after": self.green_after,
            "sources": self.sources,
            "evidence": self.evidence,
            "wall_s": round(self.wall_s, 3),
        }

    def _observed_json(self) -> dict:
        return {
            "ok": self.ok,
            "mode": "observe",
            "error": self.error,
            "error_kind": self.error_kind,
            "observed": self.observed(),
            "baseline": self.baseline,
            "forced_failure": self.forced_failure,
            "green_after": self.green_after,
            "sources": self.sources,
            "wall_s": round(self.wall_s, 3),
        }

    def dumps(self) -> str:
        return jsonio.dumps(self.to_json())

    def table(self) -> str:
        """perturbation | gate | outcome | observed reading | predicted reading | green after"""
        if self.observe:
            return self._observed_table()
        header = ["perturbation", "gate", "outcome", "observed reading", "predicted reading", "green after"]
        rows = []
        current = [p for p in self.perturbations if p.status == "current"]
        for p in self.perturbations:
            if p.status == "current":  # its records are the ledger's: counted below, not listed
                continue
            if not p.outcomes:
                rows.append([p.id, "(no gate covers the target)" if p.status != "not_run" else "(not run)", "-", "-", "-", "-"])
            for o in p.outcomes:
                outcome = o.outcome.replace("_", " ") + (" [MISS]" if o.listed and o.outcome != Outcome.RED_BY_ASSERTION else "")
                if o.outcome == Outcome.RED_OTHER and o.detail:
                    outcome += f" ({_short(o.detail)})"
                if o.kept:
                    outcome += " [record current, not re-run]"
                pred = "-"
                if o.predicted is not None:
                    pred = "predicted " + _fmt(o.predicted.get("reading"))
                green = "-" if o.green_after is None else ("yes" if o.green_after else "NO")
                rows.append([p.id, o.gate, outcome, _fmt(o.reading) if o.reading is not None else "-", pred, green])
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        lines = [" | ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
                 for r in [header, ["-" * w for w in widths], *rows]] if rows or not current else []
        if current:
            records = sum(len(p.outcomes) for p in current)
            lines.append(f"{len(current)} perturbation{'s' if len(current) != 1 else ''} with current evidence "
                         f"{'were' if len(current) != 1 else 'was'} not re-run: {'their' if len(current) != 1 else 'its'} "
                         f"{records:,} record{'s' if records != 1 else ''} {'are' if records != 1 else 'is'} not listed "
                         "here (`fidelity report` renders them; --json lists them)")
        for p in self.perturbations:
            if p.survivor:
                lines.append(f"SURVIVOR {p.id}: no gate went red by its own assertion (blind spot)")
            for m in p.misses:
                why = re.sub(r"^Skipped:\s*", "", m["detail"] or "")  # a skip or an error says why, as --json does
                lines.append(f"MISS {p.id}: listed gate {m['gate']} {m['outcome'].replace('_', ' ')}"
                             + (f" ({why})" if why else ""))
        if self.error:
            lines.append(f"ERROR ({self.error_kind}): {self.error}")
        return "\n".join(lines) + "\n"

    def _observed_table(self) -> str:
        """perturbation | outcome | gate | reading | detail, red first; then one line per perturbation."""
        header = ["perturbation", "outcome", "gate", "reading", "detail"]
        rows = []
        for obs in self.observed():
            if not obs["gates_run"]:
                rows.append([obs["id"], "-", "(no gate covers the target)", "-", ""])
            for _, key in OBSERVED_GROUPS:
                for g in obs[key]:
                    detail = _short(g["detail"]) if key == "red_other" else ""
                    rows.append([obs["id"], OBSERVED_LABELS[key], g["gate"], _fmt(g["reading"]), detail])
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        lines = [" | ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, ["-" * w for w in widths], *rows]]
        lines += [f"OBSERVED {p.id}: {p.summary()}" for p in self.perturbations]
        if self.error:
            lines.append(f"ERROR ({self.error_kind}): {self.error}")
        return "\n".join(lines) + "\n"


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return format(float(x), ".7g")
