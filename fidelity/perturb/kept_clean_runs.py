"""One run's use of the kept clean runs: what each instance still needs, and what the run adds.

The runner asks, per selected instance, how many clean runs are kept for it now and runs only the rest
(CLEAN_RUNS in all, each in a child of its own). A kept entry counts while the key of everything its
instance reads but its targets' sources (clean_run_inputs.py) is as it was, and its targets' sources are
as its runs read them (target_functions.py): by the functions their processes had called by the instance's
end, heard in the unpatched children (calls_so_far.py), or whole where they were not heard. So an edit to
a function no clean run of an instance reached keeps its runs; one to a function any of them ran, to a
file's skeleton or to a file not heard runs them again. What an earlier instance of the same child ran
counts too: it may have left state this one read. A clean child runs all the instances it has in one
process, so a record holds whatever the instances before it called: after an edit of a function called
early, few runs are kept (P1..P5: 12 of 612 after MhcResidual.readout's body was rewritten), where one
process per gate file, as check's forks run them, would keep those of every file that never called it.
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
from fidelity.perturb.target_functions import TargetsNow


class KeptCleanRuns:
    def __init__(self, store: CleanRunStore | None, keys: dict[str, str | None], targets: TargetsNow | None = None):
        """`keys`: node id -> the key of its inputs but its targets' sources (None: not keyed); `targets`: the
        instances' targets, their files read before the run."""
        self.store, self.keys, self.targets = store, keys, targets
        kept = store.entries if store is not None else {}
        self._holding = {n for n in keys if n in kept and targets.entry_holds(kept[n], keys[n])}  # whose entry counts

    @classmethod
    def for_run(cls, records_root: Path, root: Path, test_paths: list[str], fixtures: Path,
                index: gate_index.GateIndex, env: dict, instances: set[str]) -> "KeptCleanRuns":
        inputs = InputsNow(root, test_paths, fixtures, index, env)
        items = [it for it in index.items if it["nodeid"] in instances]
        targets = TargetsNow(inputs, items)
        targets.split_now()  # the files the runs' calls are placed in
        return cls(CleanRunStore(records_root), {it["nodeid"]: inputs.key_apart_from_targets(it) for it in items},
                   targets)

    @classmethod
    def disabled(cls) -> "KeptCleanRuns":
        return cls(None, {})

    def kept(self, nodeid: str) -> int:
        """Clean runs of `nodeid` kept for its inputs now."""
        return int(self.store.entries[nodeid]["runs"]) if nodeid in self._holding else 0

    def entries(self) -> dict[str, dict]:
        """The kept entries of this run's instances that count now."""
        return {n: self.store.entries[n] for n in self.keys if n in self._holding}

    def differing(self, child: ChildRun) -> list[dict]:
        """Each instance `child` ran green whose readings differ from its kept ones."""
        kept = self.entries()
        return [{"nodeid": it["nodeid"], "first": kept[it["nodeid"]]["readings"], "then": it.get("readings") or {}}
                for it in child.items if it["nodeid"] in kept and _green(it)
                and kept[it["nodeid"]]["readings"] != (it.get("readings") or {})]

    def add(self, child: ChildRun, fixtures_of=lambda it: []) -> None:
        """Each instance `child` ran green, one more clean run (the caller judged them identical), its targets
        as the child's calls read them by its end, with what the instances before it in the child read.
        `fixtures_of(item)`: the fixture files it read, as the evidence names them."""
        if self.store is None:
            return
        earlier: dict[str, dict] = {}  # what the child's instances so far read, merged
        for it in child.items:
            n = it["nodeid"]
            if self.keys.get(n) is None:
                continue
            read = self.targets.merged(self.targets.recorded_by(it), earlier)
            earlier = self.targets.merged(read, earlier, every_module=True)
            if not _green(it):
                continue
            counted = n in self._holding
            if counted:  # what this run read, with what the runs kept before it read
                read = self.targets.merged(read, self.store.entries[n]["targets"], every_module=True)
            self.store.add_run(n, self.keys[n], read, it["outcome"], it.get("readings") or {},
                               it.get("duration_s") or 0.0, fixtures_of(it), counted=counted)
            self._holding.add(n)

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
                self._holding.discard(n)
        on_disk.save()

    def save(self) -> None:
        if self.store is not None:
            self.store.save()


def _green(item: dict) -> bool:
    return item["outcome"] in ("passed", "skipped")
