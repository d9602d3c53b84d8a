"""The last claims stage of `fidelity check` whose every claim was checked (confirmed, refuted or
unchecked: none an error), kept with its verdicts under the key of what it read: what `check --changed`
reads back instead of computing every claim's oracle again.

Its verdicts are fixed by what it reads (kept_verdict.py): the source of every module it had imported
when it finished (the oracles, in the project or in the `fidelity` package), the spec files (the claims
and their stated values) and the versions of Python, sympy, mpmath and NumPy. A stage with an error is
never kept: `--changed` runs it again until it is clean.
"""
from __future__ import annotations

from pathlib import Path

from fidelity.check.kept_fixture_check import oracle_versions
from fidelity.check.kept_verdict import KeptVerdict, inputs_key

FILE_NAME = "check-claims.json"
SCHEMA = "fidelity.check-claims/1"


def _key_of(root: Path, spec_files: list[Path]):
    return lambda modules: inputs_key(root, oracle_versions(), modules, [("spec", f) for f in sorted(spec_files)])


def save(root: Path, spec_files: list[Path], rows: list[dict]) -> None:
    """Keep a clean claims stage that just ran in this process, with its rows (not rows JSON would change:
    KeptVerdict.save)."""
    KeptVerdict(root, FILE_NAME, SCHEMA).save(_key_of(root, spec_files), result=rows)


def rows(root: Path, spec_files: list[Path]) -> list[dict] | None:
    """The rows of the kept clean claims stage when it read exactly what is there now, else None."""
    kept = KeptVerdict(root, FILE_NAME, SCHEMA).kept(_key_of(root, spec_files))
    return kept["result"] if kept is not None and isinstance(kept.get("result"), list) else None
