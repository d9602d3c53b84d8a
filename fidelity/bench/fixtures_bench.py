"""Benchmark: `fidelity fixtures --verify` over every fixture, in a fresh process each time.

    python -m fidelity.bench.fixtures_bench [--repeat 3]

Times the whole command as a user runs it (interpreter start, imports, every oracle
recomputed at 50+ digits, every file compared) and prints each run and the best.
The target is under 10 s on a 2-core machine.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time

TARGET_S = 10.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "fidelity", "fixtures", "--verify"], capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr)
            return proc.returncode
    print("fidelity fixtures --verify: " + ", ".join(f"{t:.2f} s" for t in times)
          + f"; best {min(times):.2f} s (target < {TARGET_S:.0f} s: {'met' if min(times) < TARGET_S else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
