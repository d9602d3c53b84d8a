"""What a kept gate result depends on in its targets' sources: whole files, or, where its process's calls
were heard, each file's skeleton and the bodies of the functions called by the instance's end.

A gate instance names the modules it runs (its targets). Its kept result (kept_gate_run.py) records per
target module one of

  {"whole": meaning key}                                 the calls were not heard (no trace, or one that
                                                         calls_so_far.py does not trust): any edit counts
  {"skeleton": key, "units": {unit: body key}}           keys by function (function_meaning.py): the file
                                                         less its function bodies, and the body of every
                                                         function its process had called by the instance's end

and the result is read back while each recorded key equals the file's now. So an edit to a body no call
reached keeps it; an edit to a body that ran, to the skeleton (an import, a constant, a def line, a new
function, a decorated or conditional function: function_meaning.py says which) or a unit gone re-runs it.
Why the process's calls and not the instance's own: an earlier instance may have left state this one read
(calls_so_far.py).
"""
from __future__ import annotations

import functools
import os

from fidelity.function_meaning import FunctionKeys, function_keys
from fidelity.perturb.calls_so_far import ITEM_FIELD
from fidelity.perturb.clean_run_inputs import InputsNow

_real = functools.lru_cache(maxsize=None)(os.path.realpath)  # asked per instance, of the same few files


class TargetsNow:
    """The target modules of some gate instances as they are now, each file read once (make one per run)."""

    def __init__(self, inputs: InputsNow, items: list[dict]):
        """`items`: the instances (gate index items: node id, targets) whose results this judges and records."""
        self.inputs = inputs
        self._split: dict[str, FunctionKeys | None] = {}
        self._targets_of = {it["nodeid"]: sorted(it.get("targets") or ()) for it in items}

    def targets_of(self, nodeid: str) -> list[str] | None:
        """The targets of an instance this judges, sorted (None: not one of them)."""
        return self._targets_of.get(nodeid)

    def covering(self, items: list[dict]) -> "TargetsNow":
        """This, judging and recording `items` too (their targets' files split as they were here)."""
        self._targets_of.update({it["nodeid"]: sorted(it.get("targets") or ()) for it in items})
        return self

    def split_now(self) -> None:
        """Split every target's file now, before a run: the lines the run hears are then placed in the
        functions of the file it ran, whatever is saved later."""
        for m in {t for ts in self._targets_of.values() for t in ts}:
            self._function_keys(m)

    def recorded_by(self, item: dict) -> dict[str, dict]:
        """What to keep for a run's item (one of this run's instances) over its targets, by the calls its
        process was heard making (`recorded`)."""
        return self.recorded(self._targets_of[item["nodeid"]], item.get(ITEM_FIELD))

    def entry_holds(self, entry: dict, key_now: str | None) -> bool:
        """Whether a kept entry ({"key", "targets", ...}) counts now: its key is the instance's key now (of all
        it reads but its targets' sources) and every target it recorded is as it was (`holds`)."""
        return key_now is not None and entry["key"] == key_now and self.holds(entry["targets"])

    def recorded(self, targets, calls: dict[str, list[int]] | None) -> dict[str, dict]:
        """What to keep for a result over `targets` whose process called `calls` ({file: def lines of the
        units called}, calls_so_far.CallsSoFar.seen; None, or a file left out: not heard)."""
        heard = None if calls is None else {_real(p): lines for p, lines in calls.items()}
        kept = {}
        for module in sorted(targets):
            split, path = self._function_keys(module), self.inputs.target_source(module)
            if heard is None or split is None or path is None or _real(path) not in heard:
                kept[module] = {"whole": self.inputs.target_meaning(module)}
                continue
            kept[module] = split.called(heard[_real(path)])
        return kept

    def merged(self, recorded: dict[str, dict], earlier: dict[str, dict], every_module: bool = False) -> dict[str, dict]:
        """`recorded` with what `earlier` (the instances that ran before it in the same process, merged)
        recorded for its modules (`every_module`: for theirs too): a module whole in either is whole; else
        the bodies of both."""
        merged = dict(recorded)
        for module, was in earlier.items():
            now = merged.get(module)
            if now is None:
                if every_module:
                    merged[module] = was
            elif "whole" in was or "whole" in now:
                merged[module] = {"whole": self.inputs.target_meaning(module)}
            else:
                units = {**was.get("units", {}), **now.get("units", {})}
                merged[module] = {"skeleton": now.get("skeleton"), "units": dict(sorted(units.items()))}
        return dict(sorted(merged.items()))

    def holds(self, recorded: dict[str, dict]) -> bool:
        """Whether every recorded dependency is as it was (module doc)."""
        for module, was in recorded.items():
            if "whole" in was:
                if was["whole"] is None or was["whole"] != self.inputs.target_meaning(module):
                    return False
                continue
            split = self._function_keys(module)
            if split is None or not split.keeps(was):
                return False
        return True

    def _function_keys(self, module: str) -> FunctionKeys | None:
        if module not in self._split:
            path = self.inputs.target_source(module)
            self._split[module] = function_keys(path) if path and path.endswith(".py") else None
        return self._split[module]
