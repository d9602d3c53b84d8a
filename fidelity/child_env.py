"""The environment of a Python child fidelity starts (the gate run and its workers, the runner's children).

Bytecode is kept. Each child imports fidelity, the gates and the implementations under test;
compiled afresh (PYTHONDONTWRITEBYTECODE, which some environments set, or a read-only tree)
that is ~2 s of a 2-core machine per child, and a perturbation run starts a dozen children.
Their bytecode goes under the project's cache (PYTHONPYCACHEPREFIX, cache.py), never beside
the sources, so the tree stays as clean as PYTHONDONTWRITEBYTECODE keeps it. A patched module
is never cached: the import hook compiles it from memory (perturb/import_hook.py); every other
module is checked against its source's mtime and size, as Python always does.

Math-library threads are capped to the cores' share of each of `processes` children running
at once (unless the caller set them): N children each starting one thread per core would
oversubscribe the machine N times over.
"""
from __future__ import annotations

import os

from fidelity import cache

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def child_environment(env: dict[str, str], root: str | os.PathLike, processes: int | None = None) -> dict[str, str]:
    """A copy of `env` for a child of the project at `root`, one of `processes` running at once
    (None: leave the thread settings as they are)."""
    out = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out["PYTHONPYCACHEPREFIX"] = str(cache.cache_dir(root) / "bytecode")
    if processes is not None:
        for var in THREAD_VARIABLES:
            out.setdefault(var, str(max(1, (os.cpu_count() or 1) // max(1, processes))))
    return out
