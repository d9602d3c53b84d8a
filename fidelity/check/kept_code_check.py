"""The last clean code stage of `fidelity check` (every spec code location imports, every subject loads
and declares what it provides), kept under the key of what it read: what `check --changed` does not
run again. Running it imports the subjects, and with them torch (about 2 s of a 2-core machine), in a
parent that reads everything else back when nothing changed.

Its verdict is fixed by what it reads (kept_verdict.py): the source of every module it had imported when
it finished, in the project or in the `fidelity` package; the spec files (the code locations) and the
project's configuration (its subjects and mechanisms); the installed distributions and their versions
(a subject or mechanism named by an entry point, and every package a subject imports); the `FIDELITY_`
settings of the environment (a subject named there); Python's version and the machine. A problem is never
kept: `--changed` runs the stage again until it is clean.
"""
from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path

from fidelity.check.kept_verdict import KeptVerdict, inputs_key

FILE_NAME = "check-code.json"
SCHEMA = "fidelity.check-code/1"


def _named() -> list[str]:
    dists = sorted({f"dist {d.metadata['Name']} {d.version}" for d in metadata.distributions() if d.metadata['Name']})
    settings = sorted(f"setting {k}={v}" for k, v in os.environ.items() if k.startswith("FIDELITY_"))
    return [f"python {platform.python_version()}", f"machine {platform.machine()}", *dists, *settings]


def key(root: Path, spec_files: list[Path], config_file: Path, modules: list[str]) -> str:
    return inputs_key(root, _named(), modules, [*(("spec", f) for f in sorted(spec_files)), ("config", config_file)])


def save(root: Path, spec_files: list[Path], config_file: Path) -> None:
    """Keep a clean code stage that just ran in this process."""
    KeptVerdict(root, FILE_NAME, SCHEMA).save(lambda modules: key(root, spec_files, config_file, modules))


def unchanged(root: Path, spec_files: list[Path], config_file: Path) -> bool:
    """True when the kept clean code stage read exactly what is there now."""
    return KeptVerdict(root, FILE_NAME, SCHEMA).unchanged(lambda modules: key(root, spec_files, config_file, modules))
