"""The gate suite collected once, its files run in processes forked after collection.

Loaded by the gate run's pytest (`-p fidelity.gaterun.forked_workers --fidelity-forks W`, W > 1):
pytest collects the suite once, in the one process `fidelity check` starts (importing torch and
parametrising ~3,600 instances once, where W pytest-xdist workers each did all of it), then this
plugin replaces pytest's run loop (as the discovery batch child does, perturb/batch.py):

  gc.collect and gc.freeze (the collected state stays shared, copy-on-write, out of the forks'
  collections); then one fork per gate FILE, at most W alive at a time, the files started longest
  first when their seconds are known (`--fidelity-file-seconds FILE`: each file's wall in the last
  run of the whole suite, which rewrites it), else in collection order. A fork runs its file's
  instances in collection order through pytest's own runtest protocol (fixtures of every scope set
  up and torn down in it), the recorder writing to the fork's own RESULTS.fork<N> (and .partial:
  progress), and exits with os._exit. The parent computes on one thread and each fork on its share
  of the cores (fork_threads.py: a fork of a process whose OpenMP pool has started hangs).

One fork per file rather than W long-lived forks: a file runs from the collected state and
nothing it does reaches another file (its module globals, caches, generators' states, torch's
settings), so what an instance depends on is only what ran in its own fork. The price is a fork
per file: measured on this repository's suite (71 files, 3,584 instances, 2 forks at a time, a
2-core machine at load 4), os.fork took 16 ms in the parent (median; 29 ms at most), and a file's
fork ran 57 ms longer than its instances (median; 0.3 s at most, for the file of 544 instances:
copy-on-write, fixtures set up again per file), 5 s of 90 s in all, where the xdist workers it
replaces each imported torch and collected the whole suite.

When every fork has ended the parent merges the forks' items into collection order (the order
a serial run reports) and hands them to the recorder, which writes RESULTS as a serial run
does. An instance whose fork died (os._exit, a signal, an error of the fork itself) has no
outcome: it is never reported, and RESULTS.lost.json names it, with its file, the fork's exit
status and the instance it was running (gates_stage raises on it). Killing the run kills its
forks too: they are in its process group (gates_stage starts it in a group of its own).
"""
from __future__ import annotations

import gc
import json
import os
import time
from collections import Counter

import pytest

from fidelity.evidence import jsonio
from fidelity.perturb.fork_exit import run_then_exit
from fidelity.gaterun.fork_threads import ForkThreads

RECORDER = "fidelity-perturb-recorder"  # the name pytest_plugin registers the recorder under
POLL_S = 0.005  # how often the parent looks for an ended fork


def pytest_addoption(parser):
    group = parser.getgroup("fidelity-forks", "fidelity gate run: forks after collection")
    group.addoption("--fidelity-forks", type=int, default=1,
                    help="run the collected test files in this many forked processes at a time (one fork a file)")
    group.addoption("--fidelity-file-seconds", default=None,
                    help="a JSON object {test file: seconds}: the longest files start first; a run of every "
                         "collected instance writes its own seconds there")


@pytest.hookimpl(trylast=True)  # after the conftests' configure, which may import torch
def pytest_configure(config):
    forks = config.getoption("--fidelity-forks")
    if forks > 1:
        threads = ForkThreads()
        threads.hold_parent()  # before collection computes anything: a fork of a threaded parent hangs
        config.pluginmanager.register(ForkedFiles(forks, config.getoption("--fidelity-file-seconds"), threads),
                                      "fidelity-forked-files")


def fork_results(results: str, index: int) -> str:
    """Where the fork of the `index`-th file writes its results (and, beside them, .partial)."""
    return f"{results}.fork{index}"


def lost_path(results: str) -> str:
    """Where the parent names the instances no fork reported (absent: every one was)."""
    return f"{results}.lost.json"


class ForkedFiles:
    """The plugin object: pytest's run loop replaced by one fork per collected file."""

    def __init__(self, forks: int, seconds_file: str | None, threads: ForkThreads):
        self.forks = forks
        self.threads = threads
        self.seconds_file = seconds_file
        self.ended: dict[str, dict] = {}  # test file -> how its fork ended (returncode, fork_s, wall_s)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        recorder = session.config.pluginmanager.get_plugin(RECORDER)
        if recorder is None or session.config.option.collectonly:
            return None  # nothing to record: pytest's own loop
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            return None  # pytest's own loop stops the run on the collection errors, as a serial run does
        files = by_file(session.items)
        gc.collect()
        gc.freeze()
        ended = run_pool(files, self.order(files), self.forks, recorder, self.threads)
        self.ended = {files[i][0]: how for i, how in ended.items()}
        merged, lost = merge(files, ended, recorder.results)
        recorder.items = merged
        not_collected = session.testsfailed  # the files that did not collect, as pytest counted them
        session.testsfailed = not_collected + sum(it["outcome"] in ("failed", "error") for it in merged) + len(lost)
        if lost:
            jsonio.write_json(lost_path(recorder.results), lost)
        elif self.seconds_file and recorder.keep is None:  # some instances of a file: not the file's seconds
            timed = {**_read_seconds(self.seconds_file), **{f: round(how["wall_s"], 3) for f, how in self.ended.items()}}
            jsonio.write_json(self.seconds_file, dict(sorted(timed.items())))  # a run of some files times only those
        return True

    def order(self, files: list[tuple[str, list]]) -> list[int]:
        """The files' indices in the order their forks start: longest first (as the last whole run
        timed them; a file it did not time counts as none), ties and no times at all in collection order."""
        known = _read_seconds(self.seconds_file)
        return sorted(range(len(files)), key=lambda i: -known.get(files[i][0], 0.0))

    def pytest_terminal_summary(self, terminalreporter):
        """What the forks cost: the parent's side of os.fork, and each file's wall."""
        if self.ended:
            fork_ms = sorted(1000 * how["fork_s"] for how in self.ended.values())
            recorder = terminalreporter.config.pluginmanager.get_plugin(RECORDER)
            outcomes = Counter(it["outcome"] for it in recorder.items)
            terminalreporter.write_line(  # pytest's own line below counts nothing: the forks ran the tests
                f"forked_workers: {', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))} in "
                f"{len(fork_ms)} files, {self.forks} forks at a time; os.fork median "
                f"{fork_ms[len(fork_ms) // 2]:.1f} ms, max {fork_ms[-1]:.1f} ms")


def by_file(items: list) -> list[tuple[str, list]]:
    """The collected items grouped by their file, files in the order of their first item."""
    groups: dict[str, list] = {}
    for item in items:
        groups.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    return list(groups.items())


def run_pool(files: list[tuple[str, list]], order: list[int], forks: int, recorder,
             threads: ForkThreads) -> dict[int, dict]:
    """Each file run in a fork of its own, at most `forks` at once; file index -> how its fork ended."""
    pending, running, ended = list(order), {}, {}
    while pending or running:
        while pending and len(running) < forks:
            index = pending.pop(0)
            t0 = time.perf_counter()
            pid = _fork(files[index][1], fork_results(recorder.results, index), recorder, threads)
            running[pid] = (index, t0, time.perf_counter() - t0)
        for pid in list(running):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                index, t0, fork_s = running.pop(pid)
                ended[index] = {"returncode": os.waitstatus_to_exitcode(status), "fork_s": fork_s,
                                "wall_s": time.perf_counter() - t0}
        if running:
            time.sleep(POLL_S)
    return ended


def _fork(items: list, results: str, recorder, threads: ForkThreads) -> int:
    """A forked process running `items` (one file's), its recorder writing to `results`; its pid."""
    pid = recorder.fork()  # os.fork, the recorder's record of calls heard going on in the fork (calls_so_far.py)
    if pid != 0:
        return pid

    def work() -> None:
        threads.give_fork()
        _own_capture(items[0].config)
        recorder.start_over(results)
        for i, item in enumerate(items):
            nextitem = items[i + 1] if i + 1 < len(items) else None  # None: every fixture torn down after the last
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        failed = any(it["outcome"] in ("failed", "error") for it in recorder.items)
        recorder.write_results(1 if failed else 0)
    run_then_exit(work)  # a fork that ends early leaves its instances unreported: merge names them


def _own_capture(config) -> None:
    """pytest's global capture (fd 1 and 2 into a temporary file, read and truncated after each
    test) made anew in a fork: the file it inherited is shared with the forks running beside it."""
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None and capman.is_globally_capturing():
        capman.stop_global_capturing()
        capman.start_global_capturing()
        capman.suspend_global_capture()


def merge(files: list[tuple[str, list]], ended: dict[int, dict], results: str) -> tuple[list[dict], list[dict]]:
    """The forks' items in collection order, and one entry per file whose fork did not report every
    instance of it (its lost node ids, its exit status, the instance it was running)."""
    merged, lost = [], []
    for index, (path, items) in enumerate(files):
        share = fork_results(results, index)
        reported = {it["nodeid"]: it for it in _read_items(share)}
        merged += [reported[item.nodeid] for item in items if item.nodeid in reported]
        missing = [item.nodeid for item in items if item.nodeid not in reported]
        if missing:
            lost.append({"file": path, "nodeids": missing, "running": _running(share + ".partial"),
                         **ended.get(index, {})})
    return merged, lost


def _read_items(share: str) -> list[dict]:
    try:
        with open(share, encoding="utf-8") as f:
            return json.load(f).get("items", [])
    except (OSError, ValueError):
        return []


def _running(partial: str) -> str | None:
    """The instance a fork had started and not finished (its .partial lines), or None."""
    started = None
    try:
        with open(partial, encoding="utf-8", errors="replace") as f:
            for line in f:
                event = json.loads(line) if line.strip() else {}
                if event.get("event") == "start":
                    started = event["nodeid"]
                elif event.get("event") == "item" and event["item"]["nodeid"] == started:
                    started = None
    except (OSError, ValueError):
        pass
    return started


def _read_seconds(path: str | None) -> dict[str, float]:
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return {str(k): float(v) for k, v in json.load(f).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}  # the times only order the files: without them, collection order
