"""One run's use of the kept clean runs: what each instance still needs, and what the run adds.

The runner asks, per selected instance, how many clean runs are kept under its key now
(clean_run_inputs.py) and runs only the rest (CLEAN_RUNS in all, each in a child of its own).
Every later unpatched child of the run (green after) is one more clean run: its readings must equal
the kept ones, or the gate is flaky. Nothing is written until the run ends well (`save`); a gate
the run refuses is forgotten (and written at once), so its clean runs start again from nothing.
With `enabled` False (an observation) nothing is kept or read: every instance needs every run.
"""
from __future__ import annotations

from pathlib import Path

from fidelity.perturb import gate_index
from fidelity.perturb.clean_run_inputs import InputsNow
from fidelity.perturb.clean_run_store import CleanRunStore
from fidelity.perturb.launch import ChildRun


class KeptCleanRuns:
    def __init__(self, store: CleanRunStore | None, keys: dict[str, str | None]):
        self.store, self.keys = store, keys

    @classmethod
    def for_run(cls, records_root: Path, root: Path, test_paths: list[str], fixtures: Path,
                index: gate_index.GateIndex, env: dict, instances: set[str]) -> "KeptCleanRuns":
        inputs = InputsNow(root, test_paths, fixtures, index, env)
        items = {it["nodeid"]: it for it in index.items}
        return cls(CleanRunStore(records_root), {n: inputs.key(items[n]) for n in sorted(instances) if n in items})

    @classmethod
    def disabled(cls) -> "KeptCleanRuns":
        return cls(None, {})

    def kept(self, nodeid: str) -> int:
        """Clean runs of `nodeid` kept under its key now."""
        return self.store.runs_now(nodeid, self.keys.get(nodeid)) if self.store else 0

    def entries(self) -> dict[str, dict]:
        """The kept entries of this run's instances that count now."""
        if self.store is None:
            return {}
        return {n: e for n in self.keys if (e := self.store.entry(n, self.keys[n])) is not None}

    def differing(self, child: ChildRun) -> list[dict]:
        """Each instance `child` ran green whose readings differ from its kept ones."""
        kept = self.entries()
        return [{"nodeid": it["nodeid"], "first": kept[it["nodeid"]]["readings"], "then": it.get("readings") or {}}
                for it in child.items if it["nodeid"] in kept and _green(it)
                and kept[it["nodeid"]]["readings"] != (it.get("readings") or {})]

    def add(self, child: ChildRun, fixtures_of=lambda it: []) -> None:
        """Each instance `child` ran green, one more clean run (the caller judged them identical).
        `fixtures_of(item)`: the fixture files it read, as the evidence names them."""
        if self.store is None:
            return
        for it in child.items:
            if it["nodeid"] in self.keys and _green(it):
                self.store.add_run(it["nodeid"], self.keys[it["nodeid"]], it["outcome"], it.get("readings") or {},
                                   it.get("duration_s") or 0.0, fixtures_of(it))

    def forget(self, gates: set[str]) -> None:
        """Forget every instance of `gates` (refused by this run), on disk at once: what else this
        run saw is written only if it ends well (`save`)."""
        if self.store is None or not gates:
            return
        on_disk = CleanRunStore(self.store.path.parent)
        for n in self.keys:
            if n.split("[", 1)[0] in gates:
                self.store.forget(n)
                on_disk.forget(n)
        on_disk.save()

    def save(self) -> None:
        if self.store is not None:
            self.store.save()


def _green(item: dict) -> bool:
    return item["outcome"] in ("passed", "skipped")
