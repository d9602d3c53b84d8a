"""The environment of a Python child fidelity starts (the gate run and its workers, the runner's children).

Bytecode is the caller's business: a child reads and writes it as the caller's Python does. Installed
packages (torch, numpy, pytest) ship their bytecode beside their sources, so a child reads it even when
PYTHONDONTWRITEBYTECODE is set; only the project's own modules are compiled in memory then (~0.25 s a
child). A private bytecode folder would not be read next to the installed one: every new project or
clone compiled all of torch again before its first verdict (~6 s of a 2-core machine). A patched module
is never cached: the import hook compiles it from memory (perturb/import_hook.py).

Math-library threads are capped to the cores' share of each of `processes` children running
at once (unless the caller set them): N children each starting one thread per core would
oversubscribe the machine N times over.
"""
from __future__ import annotations

import os

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def child_environment(env: dict[str, str], processes: int | None = None) -> dict[str, str]:
    """A copy of `env` for a child, one of `processes` running at once
    (None: leave the thread settings as they are)."""
    out = dict(env)
    if processes is not None:
        for var in THREAD_VARIABLES:
            out.setdefault(var, str(max(1, (os.cpu_count() or 1) // max(1, processes))))
    return out
