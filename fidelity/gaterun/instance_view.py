"""`fidelity check --subject X --json`: every gate instance the subject ran, one entry each.

An entry says what the instance was given and what came of it:
  nodeid, gate, equations   the instance and the equations its gate (or its parameter) holds
  outcome                   passed | finding | error | differs from our choice | not run
  reason                    why, where not passed: the failure's first line (an error's type before it),
                            or the not-run reason
  inputs                    its parameters as text (subject, device, then the gate's own: backward, dtype, ...)
  calls                     the calls the gate made to the subject's mechanisms, arguments summarised
                            (fidelity.gates.instance_inputs); calls_not_shown counts those past the first 40
The equation verdicts say what holds; this says what each instance did, without logging from an adapter.
"""
from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from fidelity.gaterun import gates_stage
from fidelity.gaterun.verdict_words import CHOICE
from fidelity.gates.instance_inputs import INPUTS_ENV
from fidelity.spec import choices

PLUGIN = "fidelity.gates.instance_inputs"


class InstanceRecording:
    """A folder the child gate run writes each instance's inputs to, for as long as the `with` lasts."""

    def __enter__(self) -> "InstanceRecording":
        self._tmp = tempfile.TemporaryDirectory(prefix="fidelity-instances-")
        self.env = {INPUTS_ENV: self._tmp.name}
        self.args = ("-p", PLUGIN)
        return self

    def __exit__(self, *exc) -> None:
        self._tmp.cleanup()

    def inputs(self) -> dict[str, dict]:
        """nodeid -> {"inputs", "calls", "calls_not_shown"} from every process's lines."""
        found = {}
        for part in sorted(Path(self._tmp.name).glob("inputs.*.jsonl")):
            for line in part.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    entry = json.loads(line)
                    found[entry.pop("nodeid")] = entry
        return found

    def instances(self, items: list[dict], cat, subject: str, *, own: bool = False) -> list[dict]:
        return instance_entries(items, self.inputs(), cat, subject, own=own)


def _first_line(text: str | None) -> str:
    return next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")


def outcome_and_reason(item: dict, cat, *, own: bool) -> tuple[str, str | None]:
    """The instance's outcome as the equation verdicts name it, and why where it did not pass."""
    if item["outcome"] == "passed":
        return "passed", None
    if item["outcome"] == "skipped":
        return "not run", re.sub(r"^Skipped:\s*", "", item.get("skip_reason") or "skipped")
    failed = gates_stage.failure(item)
    first = _first_line(failed["message"]) or "(no message)"
    if failed["outcome"] == "error":
        return "error", f"{failed['exc_type'] or 'error'}: {first}"
    equations = failed["checks"] or item.get("equations") or []
    if not own and choices.our_choices(cat, equations):
        return CHOICE, first
    return "finding", first


def instance_entries(items: list[dict], recorded: dict[str, dict], cat, subject: str, *,
                     own: bool = False) -> list[dict]:
    """One entry per instance of `subject` among the run's items, in the run's order (module docstring)."""
    entries = []
    for item in items:
        if item.get("subject") != subject:
            continue
        outcome, reason = outcome_and_reason(item, cat, own=own)
        seen = recorded.get(item["nodeid"], {})
        entries.append({"nodeid": item["nodeid"], "gate": item["gate"], "equations": item.get("equations") or [],
                        "outcome": outcome, "reason": reason, "inputs": seen.get("inputs", {}),
                        "calls": seen.get("calls", []), "calls_not_shown": seen.get("calls_not_shown", 0)})
    return entries
