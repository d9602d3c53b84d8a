"""Benchmark: what an edit of one implementation file costs, in a throwaway copy of the project, beside the floor.

    python -m fidelity.bench.edit_cost_bench [--json FILE]

The copy is the committed tree (`git archive HEAD`: the committed reports/ included, no
.fidelity-cache, uncommitted edits not measured); this project's files are never edited. In it,
each command is run as a user runs it, in a fresh process (cache and project taken from the copy):

  check                      a plain `fidelity check`, so that a gate run is kept (not a figure)
  comment edit               a comment line added and a docstring rewritten in EDITED_FILE, and a comment
                             line added to the gate file EDITED_GATE_FILE (keys by meaning: nothing
                             either means changes; the gate index is kept too), then
    perturb --stale            `fidelity perturb --stale --json`: the perturbations it re-ran (status
                               other than "current") and the files under reports/ whose bytes it
                               changed, added or removed
    check --changed            `fidelity check --changed --json-file`: the gates stage's instances run
                               and kept
  code edit                  CODE_LINE added at module level of EDITED_FILE (after the comment edit),
    check --changed            the same command: what a one-line edit of code re-runs (the skeleton of
                               the file changed: everything that read it; this run hears their calls)
  function edit              FUNCTION_OLD rewritten as FUNCTION_NEW (one function's body: the same result
                             written otherwise), then
    check --changed            what an edit of one function re-runs (keys by function: the instances whose
                               process called it, as the run before heard them)

and, in the same run, the floor: `python -c "import torch"` (the best of three). `measure` returns
the seconds and counts for fidelity.bench.all, which prints them as figures beside the floor.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fidelity import project

PY = sys.executable
FIDELITY = [PY, "-m", "fidelity"]
FLOOR = [PY, "-c", "import torch"]
EDITED_FILE = "fidelity/impl/torch/hyper_connections.py"  # its instances: HC's gates and the loop model's
EDITED_GATE_FILE = "tests/gates/test_hc_module_alive.py"  # one of them: the comment edit reaches a gate file too
COMMENT_LINE = "# A comment line added by fidelity.bench.edit_cost_bench: it changes nothing the code means.\n"
DOCSTRING_OLD = '"""H^0 [.., n, d]: n replicated copies of h [.., d]."""'
DOCSTRING_NEW = '"""n replicated copies of h [.., d], stacked as H^0 [.., n, d] (docstring rewritten by the bench)."""'
CODE_LINE = "_EDITED = 1  # one line of code added at module level by fidelity.bench.edit_cost_bench\n"
FUNCTION_OLD = "return H.sum(dim=-2)"  # HyperConnection.readout's body
FUNCTION_NEW = "return torch.sum(H, -2)"


class BenchFailed(RuntimeError):
    """A command in the copy failed, or the edited file no longer has what the edits anchor on (the message says)."""


@dataclass
class Step:
    """One timed command in the copy, and what it did."""

    command: str
    wall_s: float
    returncode: int
    counts: dict = field(default_factory=dict)


def copy_committed(root: Path, dest: Path) -> Path:
    """The committed tree of `root` (HEAD) unpacked into `dest`; returns dest."""
    with subprocess.Popen(["git", "-C", str(root), "archive", "--format=tar", "HEAD"], stdout=subprocess.PIPE) as git:
        try:
            with tarfile.open(fileobj=git.stdout, mode="r|") as tar:
                tar.extractall(dest)
        except tarfile.ReadError:
            if git.wait() == 0:
                raise
    if git.returncode != 0:  # no archive came: say why rather than what tarfile made of nothing
        raise BenchFailed(f"git archive HEAD in {root} exited {git.returncode}: run the bench from a git checkout")
    return dest


def edit_comment(path: Path) -> None:
    """Add COMMENT_LINE before the first class and rewrite one docstring: no change of meaning."""
    text = path.read_text(encoding="utf-8")
    if DOCSTRING_OLD not in text or "\nclass " not in text:
        raise BenchFailed(f"{path}: the docstring {DOCSTRING_OLD} or a top-level class is gone; "
                          f"update DOCSTRING_OLD in {__name__}")
    text = text.replace(DOCSTRING_OLD, DOCSTRING_NEW, 1).replace("\nclass ", "\n" + COMMENT_LINE + "class ", 1)
    path.write_text(text, encoding="utf-8")


def edit_gate_comment(path: Path) -> None:
    """Add COMMENT_LINE at the end of a gate file: no change of meaning."""
    path.write_text(path.read_text(encoding="utf-8") + COMMENT_LINE, encoding="utf-8")


def edit_code(path: Path) -> None:
    """Add CODE_LINE at module level, before the first class: one line of code, run at import."""
    text = path.read_text(encoding="utf-8")
    if "\nclass " not in text:
        raise BenchFailed(f"{path}: no top-level class to put {CODE_LINE.strip()!r} before")
    path.write_text(text.replace("\nclass ", "\n" + CODE_LINE + "\n\nclass ", 1), encoding="utf-8")


def edit_function(path: Path) -> None:
    """Rewrite FUNCTION_OLD as FUNCTION_NEW: one function's body, its result the same."""
    text = path.read_text(encoding="utf-8")
    if text.count(FUNCTION_OLD) != 1:
        raise BenchFailed(f"{path}: {FUNCTION_OLD!r} is not there once; update FUNCTION_OLD in {__name__}")
    path.write_text(text.replace(FUNCTION_OLD, FUNCTION_NEW), encoding="utf-8")


def snapshot(folder: Path) -> dict[str, str]:
    """{path relative to folder: sha256 of its bytes} for every file under folder."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def files_rewritten(before: dict[str, str], after: dict[str, str]) -> int:
    """Files whose bytes changed, plus files added and files removed."""
    return sum(before.get(k) != after.get(k) for k in before.keys() | after.keys())


def perturbations_rerun(perturb_json: dict) -> int:
    """Perturbations `fidelity perturb --json` did not read back as current."""
    return sum(p["status"] != "current" for p in perturb_json["perturbations"])


def _timed(argv: list[str], cwd: Path, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, proc


def _ran(what: str, proc: subprocess.CompletedProcess, ok: tuple[int, ...] = (0, 1)) -> None:
    """0 (green) and 1 (red) are verdicts; anything else is a failure to run, said with the output's tail."""
    if proc.returncode not in ok:
        raise BenchFailed(f"{what} exited {proc.returncode} in the copy:\n{(proc.stdout + proc.stderr)[-4000:]}")


def _check_changed(copy: Path, env: dict) -> Step:
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        wall, proc = _timed([*FIDELITY, "check", "--changed", "--json-file", report.name], copy, env)
        _ran("fidelity check --changed", proc)
        stages = json.loads(Path(report.name).read_text())["stages"]
    gates = next(st for st in stages if st["stage"] == "gates")
    return Step("fidelity check --changed --json-file FILE", wall, proc.returncode,
                {"instances_run": gates["instances_run"], "instances_kept": gates["instances_kept"],
                 "red_stages": red_stages(stages)})


def red_stages(stages: list[dict]) -> list[str]:
    """The stages of a check's JSON that are not ok: why it exited 1 (an edit of code stales its evidence)."""
    return [st["stage"] for st in stages if not st["ok"]]


def _perturb_stale(copy: Path, env: dict) -> Step:
    before = snapshot(copy / "reports")
    wall, proc = _timed([*FIDELITY, "perturb", "--stale", "--json"], copy, env)
    _ran("fidelity perturb --stale --json", proc)
    out = json.loads(proc.stdout)
    return Step("fidelity perturb --stale --json", wall, proc.returncode,
                {"perturbations": len(out["perturbations"]), "rerun": perturbations_rerun(out),
                 "reports_files_rewritten": files_rewritten(before, snapshot(copy / "reports"))})


def floor_s(repeat: int = 3) -> float:
    """The best of `repeat` runs of `python -c "import torch"`."""
    best = None
    for _ in range(repeat):
        wall, proc = _timed(FLOOR, Path.cwd(), dict(os.environ))
        _ran("python -c 'import torch'", proc, ok=(0,))
        best = wall if best is None else min(best, wall)
    return best


def measure(root: Path, say=print, floor: float | None = None) -> dict:
    """{"floor_s", "check", "comment_perturb_stale", "comment_check_changed", "code_check_changed",
    "function_check_changed"}: each a
    Step as a dict (the floor in seconds: `floor` when the caller measured it in this run), all from one
    copy of `root`."""
    env = {k: v for k, v in os.environ.items() if k not in (project.ROOT_ENV, "FIDELITY_CACHE_DIR")}
    out = {"load_average_before": _load_average(), "floor_s": floor}
    if floor is None:
        say("floor: python -c 'import torch' (best of 3) ...")
        out["floor_s"] = floor_s()
    with tempfile.TemporaryDirectory(prefix="fidelity-bench-edit-") as tmp:
        copy = copy_committed(root, Path(tmp) / root.name)
        say(f"plain fidelity check in a copy of HEAD ({copy}) ...")
        wall, proc = _timed([*FIDELITY, "check"], copy, env)
        _ran("fidelity check", proc)
        out["check"] = asdict(Step("fidelity check", wall, proc.returncode))
        edit_comment(copy / EDITED_FILE)
        edit_gate_comment(copy / EDITED_GATE_FILE)
        say("comment edit: fidelity perturb --stale --json ...")
        out["comment_perturb_stale"] = asdict(_perturb_stale(copy, env))
        say("comment edit: fidelity check --changed ...")
        out["comment_check_changed"] = asdict(_check_changed(copy, env))
        edit_code(copy / EDITED_FILE)
        say("one line of code: fidelity check --changed ...")
        out["code_check_changed"] = asdict(_check_changed(copy, env))
        edit_function(copy / EDITED_FILE)
        say("one function's body: fidelity check --changed ...")
        out["function_check_changed"] = asdict(_check_changed(copy, env))
    return out


def lines(m: dict) -> list[str]:
    """The human lines: each figure, its ratio to the floor measured in the same run, and its counts."""
    floor = m["floor_s"]
    rows = [("plain check (keeps a gate run)", m["check"]),
            (f"comment edit of {EDITED_FILE} and {EDITED_GATE_FILE}: perturb --stale", m["comment_perturb_stale"]),
            ("comment edit: check --changed", m["comment_check_changed"]),
            (f"one line of code ({CODE_LINE.split('#')[0].strip()}): check --changed", m["code_check_changed"]),
            (f"one function's body ({FUNCTION_OLD} -> {FUNCTION_NEW}): check --changed", m["function_check_changed"])]
    out = [f"floor: python -c 'import torch' = {floor:.2f} s (best of 3); {os.cpu_count()} cores, "
           f"load average (1, 5, 15 min) before {m['load_average_before']}, after {_load_average()}"]
    for label, step in rows:
        counts = ", ".join(f"{k} {v}" for k, v in step["counts"].items())
        out.append(f"{label:75s} {step['wall_s']:7.2f} s = {step['wall_s'] / floor:5.2f}x the floor"
                   f"  exit {step['returncode']}" + (f"; {counts}" if counts else ""))
    return out


def _load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    args = parser.parse_args(argv)
    root = project.find().root
    try:
        m = measure(root, say=lambda text: print(text, file=sys.stderr, flush=True))
    except BenchFailed as exc:
        print(exc)
        return 1
    print("\n".join(lines(m)))
    if args.json:
        args.json.write_text(json.dumps(m, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
