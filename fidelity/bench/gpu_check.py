"""The GPU check: `python -m fidelity.bench.gpu_check OUTDIR` on a CUDA machine (sized for an H200, < 8 min).

Steps, each a child process with its own time limit, each writing into OUTDIR:
  env.json                 versions, device, the environment that matters (TRITON_INTERPRET must be unset)
  gates.log, gates.xml     pytest tests/gates -k cuda for the subjects torch and triton: every gate's
                           CUDA instance (the CPU instances are what CPU CI runs), compiled kernels
  triton_tests.log         pytest tests/triton (the kernels' own tests on CUDA tensors; the sm_90
                           compile-only test is left to CPU CI)
  sinkhorn_bench.*         python -m fidelity.bench.sinkhorn_bench --out OUTDIR
  depth_attention_bench.*  python -m fidelity.bench.depth_attention_bench --out OUTDIR
  summary.json             each step's exit status, seconds, and whether it hit its limit
Exit status 0 only when every step exited 0. `--steps` runs a subset; `--dry-run` prints the
commands without running them (what the CPU tests check).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from fidelity import project

SUBJECTS_REF = "fidelity.subjects.triton_kernels:SUBJECT"
GATE_WORKERS = max(1, min(8, (os.cpu_count() or 1) - 2))  # one GPU shared; leave the controller and the OS a core each

# (name, argv after the interpreter, time limit in seconds, log file): 180 + 120 + 75 + 75 = 450 s < 8 min.
# On an H200 (2026-12-04) the steps took 36, 46, 19 and 43 s: each limit is at least 1.5x its reading.
STEPS = (
    # on workers: each compiles its own kernels (Triton's cache is shared on disk), which serially may outrun the limit
    ("gates", ["-m", "pytest", "tests/gates", "-k", "cuda", "-q", "-p", "no:cacheprovider", "-n", "{workers}",
               "--durations=15", "--junitxml={out}/gates.xml", "-o", "junit_family=xunit2"], 180, "gates.log"),
    ("triton_tests", ["-m", "pytest", "tests/triton", "--ignore=tests/triton/test_compile_sm90.py", "-q", "-p",
                      "no:cacheprovider"], 120,
     "triton_tests.log"),
    ("sinkhorn_bench", ["-m", "fidelity.bench.sinkhorn_bench", "--out", "{out}"], 75, "sinkhorn_bench.log"),
    ("depth_attention_bench", ["-m", "fidelity.bench.depth_attention_bench", "--out", "{out}"], 75,
     "depth_attention_bench.log"),
)


def child_env() -> dict[str, str]:
    """The gates must see CUDA and COMPILED kernels: TRITON_INTERPRET removed; torch and triton subjects only."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    extra = [r for r in env.get("FIDELITY_SUBJECTS", "").split(",") if r.strip()]
    if SUBJECTS_REF not in extra:
        extra.append(SUBJECTS_REF)
    env["FIDELITY_SUBJECTS"] = ",".join(extra)
    env["FIDELITY_ONLY_SUBJECTS"] = "torch,triton"
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def commands(out: Path, steps: list[str] | None = None) -> list[tuple[str, list[str], int, Path]]:
    chosen = []
    for name, argv, limit, log in STEPS:
        if steps and name not in steps:
            continue
        chosen.append((name, [sys.executable, *[a.format(out=out, workers=GATE_WORKERS) for a in argv]], limit, out / log))
    return chosen


def environment(out: Path) -> dict:
    import torch

    info = {"python": platform.python_version(), "torch": torch.__version__, "cuda_available": torch.cuda.is_available(),
            "TRITON_INTERPRET (ignored, removed for the children)": os.environ.get("TRITON_INTERPRET")}
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(device=torch.cuda.get_device_name(0), capability=list(torch.cuda.get_device_capability(0)),
                    memory_gib=round(props.total_memory / 2**30, 1), sms=props.multi_processor_count,
                    torch_cuda=torch.version.cuda)
    (out / "env.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return info


def run_step(name: str, cmd: list[str], limit: int, log: Path, env: dict[str, str]) -> dict:
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        try:
            code = subprocess.run(cmd, cwd=project.current().root, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=limit).returncode
            timed_out = False
        except subprocess.TimeoutExpired:
            code, timed_out = None, True
            f.write(f"\n[gpu_check] {name} hit its {limit} s limit and was stopped\n")
    seconds = round(time.perf_counter() - start, 1)
    tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-3:]
    print(f"[gpu_check] {name}: exit {code}{' (TIMED OUT)' if timed_out else ''} in {seconds} s; "
          f"{log.name}: {' | '.join(tail)}", flush=True)
    return {"step": name, "exit": code, "seconds": seconds, "timed_out": timed_out, "limit_s": limit, "log": log.name}


def main(argv: list[str] | None = None) -> int:
    project.find().activate()  # the project of the working directory; its children learn it too
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="output directory (created)")
    p.add_argument("--steps", nargs="+", choices=[s[0] for s in STEPS], help="run only these steps")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = p.parse_args(argv)
    out = args.out.resolve()
    plan = commands(out, args.steps)
    if args.dry_run:
        for name, cmd, limit, log in plan:
            print(f"{name} (limit {limit} s, log {log.name}): {' '.join(cmd)}")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    info = environment(out)
    print(f"[gpu_check] {json.dumps(info)}", flush=True)
    if not info["cuda_available"]:
        print("[gpu_check] no CUDA device: nothing to check here (the CPU gates run under TRITON_INTERPRET=1)",
              file=sys.stderr)
        (out / "summary.json").write_text(json.dumps({"ok": False, "reason": "no CUDA device"}), encoding="utf-8")
        return 2
    env = child_env()
    results = [run_step(name, cmd, limit, log, env) for name, cmd, limit, log in plan]
    ok = all(r["exit"] == 0 for r in results)
    (out / "summary.json").write_text(json.dumps({"ok": ok, "steps": results}, indent=1), encoding="utf-8")
    print(f"[gpu_check] {'OK' if ok else 'FAILED'}: " + ", ".join(f"{r['step']}={r['exit']}" for r in results))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
