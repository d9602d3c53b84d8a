"""Benchmark of the perturbation runner against the naive way, measured in one run.

    python -m fidelity.bench.perturb_bench [P1..P5] [--all] [--naive-limit N] [--also-cold]

The runner: `fidelity perturb IDS` (baseline twice, forced failure, one child per
perturbation running only the gates that cover its target, one green-after child),
with a fresh gate-index cache and a throwaway reports directory, so nothing is reused.
The naive way: for each perturbation, the WHOLE gate suite (tests/gates) in a fresh
process with the patch served by the same import hook, one after another. Both are
wall-clock times on this machine; the ratio is naive / runner. --all is the whole
catalogue (`fidelity perturb --all`: our perturbations and the third-party ones, each
group with its own baseline). --also-cold times the runner once more with
--cold-start (every child a fresh interpreter) to show what the warm start saves.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fidelity.commands.perturb_cmd import expand_ids
from fidelity.targets import locate, patching
from fidelity.spec import load_catalogue

from fidelity import project
from fidelity.child_env import child_environment



def time_runner(selection: list[str], workdir: Path, cold: bool = False) -> tuple[float, int]:
    env = {**os.environ, "FIDELITY_CACHE_DIR": str(workdir / "cache")}  # a fresh index: nothing reused
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fidelity", "perturb", *selection, "--reports", str(workdir / "reports"),
                           "--json", *(["--cold-start"] if cold else [])],
                          cwd=project.current().root, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, proc.returncode


def time_naive(perturbations: list[dict], workdir: Path) -> float:
    """The naive way's seconds for `perturbations`, its children started as the runner's are
    (fidelity/child_env.py: the same environment and threads), so only the way differs."""
    search = locate.child_search_path(str(project.current().root))
    env = child_environment(dict(os.environ), processes=1)
    start = time.perf_counter()
    for p in perturbations:
        path = locate.find_source(p["target"], search)
        patch = patching.make_patch(p["id"], p["target"], path, p["edits"])
        job = {"mode": "run", "args": ["tests/gates"], "results": str(workdir / f"{p['id']}.json"),
               "rootdir": str(project.current().root),
               "patch": {"perturbation": p["id"], "module": p["target"], "path": path, "source": patch.patched}}
        job_file = workdir / f"{p['id']}.job.json"
        job_file.write_text(json.dumps(job))
        subprocess.run([sys.executable, "-m", "fidelity.perturb.child", str(job_file)], cwd=project.current().root,
                       capture_output=True, text=True, env=env)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    project.find().activate()  # the project of the working directory; its children learn it too
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", default=["P1..P5"])
    parser.add_argument("--all", action="store_true", help="time the whole catalogue with the runner")
    parser.add_argument("--also-cold", action="store_true", help="also time the runner with --cold-start")
    parser.add_argument("--naive-limit", type=int, default=5,
                        help="time the naive way on at most this many perturbations and scale (default 5)")
    args = parser.parse_args(argv)
    cat = load_catalogue()
    ids = list(cat.perturbations) if args.all else expand_ids(args.ids, list(cat.perturbations))
    # the naive way runs our own subjects' suite: a third-party perturbation needs its package's run
    chosen = [cat.perturbations[i].data for i in ids if not cat.perturbations[i].data.get("subject")]
    with tempfile.TemporaryDirectory(prefix="fidelity-bench-") as tmp:
        work = Path(tmp)
        runner_s, code = time_runner(["--all"] if args.all else ids, work / "warm")
        cold = time_runner(["--all"] if args.all else ids, work / "cold", cold=True) if args.also_cold else None
        sample = chosen[: args.naive_limit]
        naive_s = time_naive(sample, work) * len(chosen) / max(1, len(sample))
    scaled = "" if len(sample) == len(chosen) else f" (measured on {len(sample)}, scaled to {len(chosen)})"
    ordered = sorted(ids, key=lambda i: (len(i), i))  # P2 before P10
    print(f"perturbations: {len(ids)} ({ordered[0]}..{ordered[-1]}), cpu cores: {os.cpu_count()}")
    print(f"runner  (fidelity perturb):                  {runner_s:8.1f} s  exit {code}")
    if cold is not None:
        print(f"runner  (fidelity perturb --cold-start):     {cold[0]:8.1f} s  exit {cold[1]}")
    print(f"naive   (whole gate suite per perturbation): {naive_s:8.1f} s{scaled}"
          + (f", our {len(chosen)} of them" if len(chosen) != len(ids) else ""))
    print(f"ratio   naive / runner:                      {naive_s / runner_s:8.2f} x")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
