"""The last gate run of `fidelity check`, kept per instance under the key of its inputs: what
`check --changed` does not run again.

Every check that runs the gate suite keeps each instance's result (outcome, readings, message:
the plugin's item) under
  - the key of everything the instance reads but its targets' sources
    (clean_run_inputs.InputsNow.key_apart_from_targets): its gate file, the suite's helpers and conftests,
    every fixture, the specs, the names of its targets, the `fidelity` package and the configured subject
    modules, the versions of Python, torch, NumPy, pytest and Triton;
  - and its targets' sources by the functions its process had called by its end (target_functions.py,
    keys by function), or whole where those calls were not heard.
`check --changed` runs only the instances whose inputs differ from the kept ones (or that have none:
never run, or no target to key them by) and reads the others' results as they were, a red one included:
an unchanged input gives the same verdict. A plain `check` runs every instance and keeps them all again.

The file lives in the project's cache directory (fidelity/cache.py): one machine's memory,
deleting it only means the next `--changed` runs everything.
"""
from __future__ import annotations

import os
from pathlib import Path

from fidelity import cache, project
from fidelity.evidence import jsonio
from fidelity.perturb import gate_index
from fidelity.perturb.calls_so_far import ITEM_FIELD
from fidelity.perturb.target_functions import TargetsNow
from fidelity.perturb.clean_run_inputs import InputsNow

FILE_NAME = "check-gate-run.json"
SCHEMA = "fidelity.check-gate-run/2"  # 2: targets kept by function


def keys_of(here: project.Project, items: list[dict]) -> "InstanceKeys":
    """The inputs of each of `items` (the whole suite's: collected ones, or a complete run's, which
    name their targets too) as they are now."""
    items = _with_files(items)
    index = gate_index.GateIndex(key="", items=items)
    return InstanceKeys(InputsNow(here.root, [here.relative(here.gates)], here.fixtures, index, dict(os.environ)), items)


class InstanceKeys(dict):
    """node id -> the key of all its inputs but its targets' sources (None: it cannot be keyed), in suite
    order; `targets` judges and records those sources (target_functions.py)."""

    def __init__(self, inputs: InputsNow, items: list[dict], known: "InstanceKeys | None" = None):
        """`known`: keys made under the same `inputs`: the key of an item with the same node id and targets, and
        the targets' splits, are reused."""
        super().__init__((it["nodeid"], known[it["nodeid"]] if known is not None and known.made_for(it)
                          else inputs.key_apart_from_targets(it)) for it in items)
        self.targets = TargetsNow(inputs, items) if known is None else known.targets.covering(items)
        self._inputs, self._modules = inputs, _targeted(items)

    def over(self, here: project.Project, items: list[dict]) -> "InstanceKeys":
        """The keys of `items` (a complete run's, in its order): those computed here reused where the inputs are
        the same (the same modules targeted: the shared part of a key leaves their files out), else keys_of."""
        if _targeted(items) != self._modules:
            return keys_of(here, items)
        return InstanceKeys(self._inputs, _with_files(items), known=self)

    def made_for(self, item: dict) -> bool:
        """Whether this holds the key of `item`: of its node id, made for the same targets."""
        return item["nodeid"] in self and self.targets.targets_of(item["nodeid"]) == sorted(item.get("targets") or ())

    def entry(self, item: dict, earlier: dict | None = None) -> dict | None:
        """What to keep for a run's item: its key and its targets as its calls read them, merged with `earlier`
        (what the instances a whole run would have run before it in its process recorded, merged);
        None: not kept."""
        key = self.get(item["nodeid"])
        if key is None:
            return None
        targets = self.targets.recorded_by(item)
        return {"key": key, "targets": self.targets.merged(targets, earlier or {}), "item": without_trace(item)}

    def holds(self, nodeid: str, kept: dict) -> bool:
        return self.targets.entry_holds(kept, self.get(nodeid))


def _with_files(items: list[dict]) -> list[dict]:
    """The items, each naming its gate file as the gate index's do (a run's items name only their node id)."""
    return [{**it, "file": it["nodeid"].split("::", 1)[0]} for it in items]


def _targeted(items: list[dict]) -> frozenset[str]:
    return frozenset(t for it in items for t in it.get("targets") or ())


def without_trace(item: dict) -> dict:
    """The item as check reports it: the calls heard are the kept run's business only."""
    return {k: v for k, v in item.items() if k != ITEM_FIELD}


class KeptGateRun:
    """The kept results of the project at `root`, read once."""

    def __init__(self, root: str | os.PathLike):
        self.path = Path(cache.cache_dir(root)) / FILE_NAME
        self.entries: dict[str, dict] = _read(self.path)

    def keys_now(self, here: project.Project) -> InstanceKeys:
        """The inputs now of the instances this run kept (their items name what a key is made of)."""
        return keys_of(here, [e["item"] for e in self.entries.values()])

    def unchanged(self, keys: InstanceKeys) -> dict[str, dict]:
        """node id -> its kept item, for each instance whose inputs now are those it was kept under."""
        return {n: self.entries[n]["item"] for n in keys if n in self.entries and keys.holds(n, self.entries[n])}

    def save(self, keys: InstanceKeys, items: list[dict], read_back=(), by_file: bool = True) -> None:
        """Keep `items` (what a gate run ran, each with the calls it heard) under their inputs, and the
        entries of `read_back` (the instances read from this kept run: their inputs held) as they are; an
        instance without a key is not kept. Together they are a complete run's.

        A whole run would have run the instances read back in the same process as the ones that ran (the
        same file's fork, or with `by_file` False the one serial process), before those that follow them, and
        state they left could count: so what they recorded is added to the records of those that follow."""
        entries = {n: self.entries[n] for n in read_back if n in self.entries}
        ran = {it["nodeid"]: it for it in items}
        earlier: dict[str, dict] = {}  # process -> the targets its instances so far recorded, merged
        for n in keys:
            process = n.split("::", 1)[0] if by_file else ""
            if n in ran and (e := keys.entry(ran[n], earlier.get(process))) is not None:
                entries[n] = e
            if n in entries:
                earlier[process] = keys.targets.merged(entries[n]["targets"], earlier.get(process, {}), every_module=True)
        if not ran and entries == self.entries:
            return  # nothing ran and nothing left: the file holds this already (writing it cost 0.4 s)
        jsonio.write_machine_json(self.path, {"schema": SCHEMA, "instances": entries})


def _read(path: Path) -> dict[str, dict]:
    """The valid kept entries (jsonio.read_instances: none of a bad file)."""
    return {n: e for n, e in jsonio.read_instances(path, SCHEMA).items()
            if isinstance(e, dict) and isinstance(e.get("key"), str) and isinstance(e.get("item"), dict)
            and isinstance(e.get("targets"), dict) and e["item"].get("nodeid") == n}
