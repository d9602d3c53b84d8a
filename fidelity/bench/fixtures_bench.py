"""Benchmark: `fidelity fixtures --verify` over every fixture, in a fresh process each time, beside its floor.

    python -m fidelity.bench.fixtures_bench [--repeat 3]

Times the whole command as a user runs it (interpreter start, imports, every oracle
recomputed at 60 digits, every file compared) and, in the same run, `python -c "import torch"`:
the floor a command of this harness that imports torch cannot go below (verify itself does not
import torch). Prints each run, the best of each, their ratio, and the target: under 1.5 s.
`measure(repeat)` returns the numbers for another script (fidelity.bench.all).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time

from fidelity.report.performance import met_words

TARGET_S = 1.5

VERIFY = [sys.executable, "-m", "fidelity", "fixtures", "--verify"]
TORCH_IMPORT = [sys.executable, "-c", "import torch"]


class BenchFailed(RuntimeError):
    """A timed command exited non-zero (its output is the message)."""


def _times(cmd: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise BenchFailed(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return times


def measure(repeat: int = 3) -> dict:
    """{"verify_s", "torch_import_s", "ratio"}: the best of `repeat` fresh runs of each, alternated so that
    a change in the machine's load falls on both; raises BenchFailed if either command fails."""
    verify, torch_import = [], []
    for _ in range(repeat):
        verify += _times(VERIFY, 1)
        torch_import += _times(TORCH_IMPORT, 1)
    best_v, best_t = min(verify), min(torch_import)
    return {"verify_s": best_v, "torch_import_s": best_t, "ratio": best_v / best_t,
            "verify_runs": verify, "torch_import_runs": torch_import}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        m = measure(args.repeat)
    except BenchFailed as exc:
        print(exc)
        return 1
    met = met_words(m["verify_s"] <= TARGET_S)
    print("fidelity fixtures --verify: " + ", ".join(f"{t:.2f} s" for t in m["verify_runs"])
          + f"; best {m['verify_s']:.2f} s (target <= {TARGET_S} s: {met})")
    print("python -c 'import torch' (the floor): " + ", ".join(f"{t:.2f} s" for t in m["torch_import_runs"])
          + f"; best {m['torch_import_s']:.2f} s")
    print(f"ratio verify / torch import: {m['ratio']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
