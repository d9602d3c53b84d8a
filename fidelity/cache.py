"""What fidelity keeps between runs that it can always recompute: the project's cache directory.

It holds the gate index (perturb/gate_index.py) and the last gate run of `check`
(check/kept_gate_run.py: what `check --changed` reads, each result under the hash of the inputs it
came from, and its last clean fixture verification: check/kept_fixture_check.py) and the specs' values
(spec/kept_values.py: what spec_value reads in a gate's child) and the meaning keys of source
files by the bytes they came from (source_meaning.py). Nothing in it decides a
verdict that a run of the same inputs would not give: deleting it only costs time. Where:
`.fidelity-cache` under the project root, unless FIDELITY_CACHE_DIR says (an absolute path, or
one relative to the root).
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR = ".fidelity-cache"


def cache_dir(root: str | os.PathLike) -> Path:
    """The cache directory of the project at `root`."""
    p = Path(os.environ.get("FIDELITY_CACHE_DIR", CACHE_DIR))
    return p if p.is_absolute() else Path(root) / p
