"""The last gate run of `fidelity check`, kept per instance under the key of its inputs: what
`check --changed` does not run again.

Every check that runs the gate suite keeps each instance's result (outcome, readings, message:
the plugin's item) under clean_run_inputs.InputsNow.key, the sha256 of everything the instance
reads: its gate file, the suite's helpers and conftests, every fixture, the specs, its targets' sources, the
`fidelity` package and the configured subject modules, the versions of Python, torch, NumPy,
pytest and Triton. `check --changed` runs only the instances whose key differs from the kept one
(or that have none: never run, or no target to key them by) and reads the others' results as they
were, a red one included: an unchanged input gives the same verdict. A plain `check` runs every
instance and keeps them all again.

The file lives in the project's cache directory (fidelity/cache.py): one machine's memory,
deleting it only means the next `--changed` runs everything.
"""
from __future__ import annotations

import os
from pathlib import Path

from fidelity import cache, project
from fidelity.evidence import jsonio
from fidelity.perturb import gate_index
from fidelity.perturb.clean_run_inputs import InputsNow

FILE_NAME = "check-gate-run.json"
SCHEMA = "fidelity.check-gate-run/1"


def instance_keys(here: project.Project) -> dict[str, str | None]:
    """Each gate instance of `here`'s suite (collected, or read from the cached gate index) and the
    key of its inputs now. Raises GateCollectionError when the suite does not collect."""
    index = gate_index.collect([here.relative(here.gates)], repo_root=here.root, cache_dir=cache.cache_dir(here.root))
    return keys_of(here, index.items)


def keys_of(here: project.Project, items: list[dict]) -> dict[str, str | None]:
    """The key of each of `items` (the whole suite's: collected ones, or a complete run's, which
    name their targets too) as its inputs are now."""
    items = [{**it, "file": it["nodeid"].split("::", 1)[0]} for it in items]
    index = gate_index.GateIndex(key="", items=items)
    inputs = InputsNow(here.root, [here.relative(here.gates)], here.fixtures, index, dict(os.environ))
    return {it["nodeid"]: inputs.key(it) for it in items}


class KeptGateRun:
    """The kept results of the project at `root`, read once."""

    def __init__(self, root: str | os.PathLike):
        self.path = Path(cache.cache_dir(root)) / FILE_NAME
        self.entries: dict[str, dict] = _read(self.path)

    def unchanged(self, keys: dict[str, str | None]) -> dict[str, dict]:
        """node id -> its kept item, for each instance whose key now equals the kept one."""
        return {n: self.entries[n]["item"] for n, key in keys.items()
                if key is not None and n in self.entries and self.entries[n]["key"] == key}

    def save(self, keys: dict[str, str | None], items: list[dict]) -> None:
        """Keep `items` (a complete gate run's) under `keys`; an instance without a key is not kept."""
        entries = {it["nodeid"]: {"key": keys[it["nodeid"]], "item": it} for it in items
                   if keys.get(it["nodeid"]) is not None}
        jsonio.write_json(self.path, {"schema": SCHEMA, "instances": entries})


def _read(path: Path) -> dict[str, dict]:
    """The valid kept entries (jsonio.read_instances: none of a bad file)."""
    return {n: e for n, e in jsonio.read_instances(path, SCHEMA).items()
            if isinstance(e, dict) and isinstance(e.get("key"), str) and isinstance(e.get("item"), dict)
            and e["item"].get("nodeid") == n}
