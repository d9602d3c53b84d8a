"""A command timed as a user runs it: its wall clock, and the peak memory of its process tree.

Memory is sampled from /proc every SAMPLE_S while the command runs: the largest resident set of
any one process in the tree (what `/usr/bin/time -v` calls maximum resident set size) and the
largest sum over the tree at one moment (workers forked from one parent share pages, so the sum
over-counts them: an upper bound). Without /proc (not Linux) both read None. A process that lives
less than SAMPLE_S may be missed: peaks are lower bounds of the truth by that much.
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SAMPLE_S = 0.1


@dataclass(frozen=True)
class Timed:
    argv: tuple[str, ...]
    wall_s: float
    returncode: int
    peak_process_mib: float | None   # the largest single process's resident set
    peak_tree_mib: float | None      # the largest sum of resident sets over the tree at one time
    output_tail: str


def run(argv: list[str], *, cwd: str | os.PathLike | None = None, env: dict | None = None) -> Timed:
    """Run `argv` to its end, timing it and sampling its tree's memory."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peaks = {"process": None, "tree": None}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            sizes = [s for s in (_rss_mib(p) for p in _tree(proc.pid)) if s is not None]
            if sizes:
                peaks["process"] = max(peaks["process"] or 0.0, max(sizes))
                peaks["tree"] = max(peaks["tree"] or 0.0, sum(sizes))
            done.wait(SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    return Timed(tuple(argv), wall, proc.returncode, peaks["process"], peaks["tree"], out[-4000:])


def _tree(pid: int) -> list[int]:
    """`pid` and every descendant, from /proc/PID/task/*/children."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo += [int(c) for c in task.read_text().split()]
            except (OSError, ValueError):
                pass
    return out


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        return None
    return None
