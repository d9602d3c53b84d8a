"""Clean runs kept on disk: per gate instance, under its inputs key, how many unpatched runs agreed.

One file, `clean-runs.json` in the evidence folder (beside the records, under the same writer
lock; a `--file` catalogue's folder has its own), SCHEMA "fidelity.clean-runs/2":
  {"schema": ..., "instances": {nodeid: {"key", "targets", "runs", "outcome", "readings", "duration_s",
                                         "fixtures_read"}}}
  key        clean_run_inputs.InputsNow.key_apart_from_targets of the instance when its runs were seen
  targets    its targets' sources as those runs read them: by the functions their processes called, or
             whole (target_functions.py: keys by function)
  runs       how many separate unpatched children ran it under that key, every one green
             with these readings (bit-identical, as jsonio encodes them)
  outcome    "passed" or "skipped"
  readings   the readings every one of those runs recorded
  duration_s how long its first run took (orders the children; never compared)
  fixtures_read  the fixture files its first run opened (the evidence of its gate names them)
An entry whose key or targets differ from the instance's now is never counted (kept_clean_runs.py
judges that), and the next run replaces it. A run that refuses an instance (red, or readings that moved) forgets it, so
it is run CLEAN_RUNS times afresh next time. Two runs writing one file at once are kept apart by
the evidence folder's writer lock; a write is atomic (jsonio).
"""
from __future__ import annotations

import os
from pathlib import Path

from fidelity.evidence import jsonio, paths

SCHEMA = "fidelity.clean-runs/2"  # 2: the targets apart from the key, by function
FILE_NAME = paths.CLEAN_RUNS_FILE  # directly in the evidence root, beside the <id>.json files (record scans skip it)


def store_path(records_root: str | os.PathLike) -> Path:
    return Path(records_root) / FILE_NAME


class CleanRunStore:
    """The kept clean runs of one evidence folder, read once; `save` writes them back if changed."""

    def __init__(self, records_root: str | os.PathLike):
        self.path = store_path(records_root)
        self.entries: dict[str, dict] = _read(self.path)
        self._changed = False

    def add_run(self, nodeid: str, key: str, targets: dict, outcome: str, readings: dict, duration_s: float,
                fixtures_read: list[str] = (), counted: bool = False) -> None:
        """One more green unpatched run of `nodeid`, under `key` with its `targets` as read. `counted`: the
        entry kept now holds (the caller judged it) and this run adds to it, with `targets` now what all its
        runs read; its outcome and readings must equal this run's (clean_runs.judge). Else the run starts
        the entry afresh."""
        e = self.entries.get(nodeid)
        if counted and e is not None:
            if (e["outcome"], jsonio.dumps(e["readings"])) != (outcome, jsonio.dumps(readings)):
                raise ValueError(f"{nodeid}: a clean run that differs from the kept ones cannot be added to them")
            e["runs"] += 1
            e["targets"] = targets
        else:
            self.entries[nodeid] = {"key": key, "targets": targets, "runs": 1, "outcome": outcome,
                                    "readings": readings, "duration_s": round(float(duration_s), 6),
                                    "fixtures_read": sorted(fixtures_read)}
        self._changed = True

    def forget(self, nodeid: str) -> None:
        if self.entries.pop(nodeid, None) is not None:
            self._changed = True

    def save(self) -> None:
        if self._changed:
            jsonio.write_json(self.path, {"schema": SCHEMA, "instances": dict(sorted(self.entries.items()))})
            self._changed = False


def _read(path: Path) -> dict[str, dict]:
    """The valid entries of a store file (jsonio.read_instances: none of a bad file)."""
    return {n: e for n, e in jsonio.read_instances(path, SCHEMA).items() if _valid(e)}


def _valid(e: object) -> bool:
    return (isinstance(e, dict) and isinstance(e.get("key"), str) and isinstance(e.get("targets"), dict)
            and isinstance(e.get("runs"), int)
            and not isinstance(e.get("runs"), bool) and e["runs"] > 0 and e.get("outcome") in ("passed", "skipped")
            and isinstance(e.get("readings"), dict))
