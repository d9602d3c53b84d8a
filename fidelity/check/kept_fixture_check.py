"""The last clean verification of the fixtures by `fidelity check`, kept under the key of what it read:
what `check --changed` does not recompute.

Verifying the fixtures recomputes every oracle at 40 digits (6 s of a 2-core machine). Its verdict is
fixed by what it reads: the source of every module it had imported when it finished (the fixture
builders and oracles, in the project and in the `fidelity` package; by name, each hashed as a run would
import it now, so a check from another install of `fidelity` hashes that install's files), every file of the fixtures folder,
the spec files (predicted readings are checked against them) and the versions of Python, sympy, mpmath
and NumPy. A plain check verifies and, when nothing drifted, keeps the key of those inputs and the names
of those modules; `check --changed` hashes the same inputs again and, if the key is equal, reads "0
drifts" instead of recomputing. A drifted or failed verification is never kept, so `--changed`
recomputes until one is clean (kept_verdict.py holds what every kept stage shares).
"""
from __future__ import annotations

import platform
from pathlib import Path

from fidelity.check.kept_verdict import KeptVerdict, inputs_key, modules_read
from fidelity.perturb.clean_run_inputs import distribution_version

FILE_NAME = "check-fixtures.json"
SCHEMA = "fidelity.check-fixtures/1"
VERSIONED = ("sympy", "mpmath", "numpy")

__all__ = ["FILE_NAME", "key", "modules_read", "oracle_versions", "save", "unchanged"]


def oracle_versions() -> list[str]:
    """The versions an oracle's result depends on: Python's and its numeric packages'."""
    return [f"python {platform.python_version()}", *(f"{dist} {distribution_version(dist)}" for dist in VERSIONED)]


def key(root: Path, fixtures_dir: Path, spec_files: list[Path], modules: list[str]) -> str:
    """The sha256 of the verification's inputs (kept_verdict.inputs_key)."""
    named = oracle_versions()
    fixtures = sorted(p for p in Path(fixtures_dir).rglob("*") if p.is_file()) if Path(fixtures_dir).is_dir() else []
    return inputs_key(root, named, modules, [*(("fixture", f) for f in fixtures),
                                              *(("spec", f) for f in sorted(spec_files))])


def save(root: Path, fixtures_dir: Path, spec_files: list[Path]) -> None:
    """Keep a clean verification that just ran in this process."""
    KeptVerdict(root, FILE_NAME, SCHEMA).save(lambda modules: key(root, fixtures_dir, spec_files, modules))


def unchanged(root: Path, fixtures_dir: Path, spec_files: list[Path]) -> bool:
    """True when the kept clean verification read exactly what is there now."""
    return KeptVerdict(root, FILE_NAME, SCHEMA).unchanged(lambda modules: key(root, fixtures_dir, spec_files, modules))
