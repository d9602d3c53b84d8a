"""Math-library threads around a fork: the parent that forks computes on one thread, each fork on
the threads its environment asks for (child_env.py: the cores' share of each process running at once).

GNU OpenMP (torch's intra-op pool, and MKL's under it) is not fork-safe: once a parallel region has
started the pool's threads in a process, the first parallel region in a fork of it waits forever for
threads the fork does not have. Seen here: OMP_NUM_THREADS=2, a 2000x2000 matmul in the parent, the same
in a fork: the fork hangs (an elementwise op alike); with the parent held to one thread it does not.
The parent's threads are never started, whatever its collection computes: it is held to one thread from
its configuration on (torch.set_num_threads(1), or the environment torch reads when it is imported
later), and each fork is given back the count it would have had, before it runs anything.
"""
from __future__ import annotations

import os
import sys

from fidelity.child_env import THREAD_VARIABLES


class ForkThreads:
    """What the process had asked for (its thread variables; torch's count), put back in each fork."""

    def __init__(self):
        self.environment = {var: os.environ.get(var) for var in THREAD_VARIABLES}
        torch = sys.modules.get("torch")
        self.torch_threads = torch.get_num_threads() if torch is not None else None

    def hold_parent(self) -> None:
        """This process computes on one thread from now on (it forks later)."""
        for var in THREAD_VARIABLES:
            os.environ[var] = "1"  # a torch imported later starts with one thread
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(1)

    def give_fork(self) -> None:
        """In a fork: the environment as it was, and torch's threads as torch would have counted them."""
        for var, value in self.environment.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(self.torch_threads or threads_torch_starts_with(self.environment))


def threads_torch_starts_with(environment) -> int:
    """The threads a torch imported under `environment` starts with (here, where it was imported under
    another): torch built with MKL (the wheels) takes MKL's count, MKL_NUM_THREADS, else OMP_NUM_THREADS,
    else the cores."""
    for var in ("MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        value = (environment.get(var) or "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return os.cpu_count() or 1
