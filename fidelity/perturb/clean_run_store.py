"""Clean runs kept on disk: per gate instance, under its inputs key, how many unpatched runs agreed.

One file, `clean-runs.json` in the evidence folder (beside the records, under the same writer
lock; a `--file` catalogue's folder has its own), SCHEMA "fidelity.clean-runs/1":
  {"schema": ..., "instances": {nodeid: {"key", "runs", "outcome", "readings", "duration_s", "fixtures_read"}}}
  key        clean_run_inputs.InputsNow.key of the instance when its runs were seen
  runs       how many separate unpatched children ran it under that key, every one green
             with these readings (bit-identical, as jsonio encodes them)
  outcome    "passed" or "skipped"
  readings   the readings every one of those runs recorded
  duration_s how long its first run took (orders the children; never compared)
  fixtures_read  the fixture files its first run opened (the evidence of its gate names them)
An entry under another key than the instance's now is never counted: `runs_now` says 0, and the
next run replaces it. A run that refuses an instance (red, or readings that moved) forgets it, so
it is run CLEAN_RUNS times afresh next time. Two runs writing one file at once are kept apart by
the evidence folder's writer lock; a write is atomic (jsonio).
"""
from __future__ import annotations

import os
from pathlib import Path

from fidelity.evidence import jsonio, paths

SCHEMA = "fidelity.clean-runs/1"
FILE_NAME = paths.CLEAN_RUNS_FILE  # directly in the evidence root, beside the <id>.json files (record scans skip it)


def store_path(records_root: str | os.PathLike) -> Path:
    return Path(records_root) / FILE_NAME


class CleanRunStore:
    """The kept clean runs of one evidence folder, read once; `save` writes them back if changed."""

    def __init__(self, records_root: str | os.PathLike):
        self.path = store_path(records_root)
        self.entries: dict[str, dict] = _read(self.path)
        self._changed = False

    def entry(self, nodeid: str, key: str | None) -> dict | None:
        """The kept entry of `nodeid` if it was seen under `key`, else None."""
        e = self.entries.get(nodeid)
        return e if key is not None and e is not None and e.get("key") == key else None

    def runs_now(self, nodeid: str, key: str | None) -> int:
        """Clean runs of `nodeid` kept under `key` (0: none, or under another key)."""
        e = self.entry(nodeid, key)
        return int(e["runs"]) if e else 0

    def add_run(self, nodeid: str, key: str | None, outcome: str, readings: dict, duration_s: float,
                fixtures_read: list[str] = ()) -> None:
        """One more green unpatched run of `nodeid`. Its outcome and readings must equal the kept
        ones under `key` (the caller judged them: clean_runs.judge); another key starts afresh."""
        if key is None:
            return
        e = self.entry(nodeid, key)
        if e is None:
            self.entries[nodeid] = {"key": key, "runs": 1, "outcome": outcome, "readings": readings,
                                    "duration_s": round(float(duration_s), 6), "fixtures_read": sorted(fixtures_read)}
        else:
            if (e["outcome"], jsonio.dumps(e["readings"])) != (outcome, jsonio.dumps(readings)):
                raise ValueError(f"{nodeid}: a clean run that differs from the kept ones cannot be added to them")
            e["runs"] += 1
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
    return (isinstance(e, dict) and isinstance(e.get("key"), str) and isinstance(e.get("runs"), int)
            and not isinstance(e.get("runs"), bool) and e["runs"] > 0 and e.get("outcome") in ("passed", "skipped")
            and isinstance(e.get("readings"), dict))
