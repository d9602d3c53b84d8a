"""Every speed figure of the harness, each beside its floor or its naive counterpart measured in the same run.

    python -m fidelity.bench.all [--repeat N] [--perturb-all] [--naive-limit N] [--out FILE]

Each command is run as a user runs it, in a fresh process from the project root (timed_command.py:
wall clock and the peak memory of its process tree):

  floor            python -c "import torch": what any child of the harness that imports torch pays
  check            fidelity check               peer: fidelity check --jobs 1 (the gate suite serially)
  fixtures verify  fidelity fixtures --verify   floor (it imports no torch)
  report           fidelity report --no-gates --out TMP
  edits            in a copy of the committed project, after a plain check there (edit_cost_bench.py):
                   perturb --stale, then check --changed, after a comment-only edit of one implementation
                   file and of one of its gate files; check --changed after one line of code added to the
                   implementation; check --changed after one function's body rewritten (keys by function)
  perturb P1..P5   fidelity perturb P1..P5      from nothing; peer: the naive runner (the whole gate
                                                suite per perturbation, one after another: perturb_bench.py)
  perturb P1..P5, kept   the same command again, with the clean runs the first one kept
  perturb --all    with --perturb-all: fidelity perturb --all from nothing (tens of minutes on 2 cores)
  discover         with --discover-vs-mutmut: fidelity discover --module M --no-record; peer: mutmut on
                   the same module and gates (discover_bench.py), its seconds per mutant times discover's
                   mutants, so the ratio is of mutants per second (minutes)

perturb runs with a fresh cache and a throwaway reports directory (nothing reused, evidence
untouched; its second run reuses that directory's kept clean runs); check and report read the
project as it is. Each figure is the best of --repeat
runs (perturb and the peers: one run). Prints a table and writes FILE (default
reports/bench.json): the figures, their targets and whether each was met, the machine (cores,
load average before and after) and the versions. Ratios are of figures measured in this run
only; a target missed is printed as MISSED, never hidden.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

from fidelity import project, textable
from fidelity.bench import discover_bench, edit_cost_bench, fixtures_bench, perturb_bench, timed_command
from fidelity.evidence import jsonio
from fidelity.evidence.record import utc_now, versions
from fidelity.report import performance

PY = sys.executable
FIDELITY = [PY, "-m", "fidelity"]
# targets on a 2-core machine: seconds, and multiples of the torch-import floor (issue 30; fixtures
# and report: issue 18; the function edit, P1..P5 kept and perturb --all: issue 54)
TARGETS = {"check": (None, 10.0), "check_changed": (None, 4.0), "check_changed_function": (None, 4.0),
           "check_changed_comment": (None, 2.0),  # nothing changed in meaning: everything read back (issue 54)
           "fixtures_verify": (1.5, 1.0), "report_no_gates": (10.0, None), "perturb_p1_p5": (30.0, None),
           "perturb_p1_p5_kept": (None, 2.0), "perturb_all": (180.0, None)}
TARGET_CHECK_MIB = 500.0
TARGET_RUNNER_VS_NAIVE = 30.0


def _best(argv: list[str], repeat: int, root: Path) -> timed_command.Timed:
    runs = [timed_command.run(argv, cwd=root) for _ in range(repeat)]
    failed = [r for r in runs if r.returncode != 0]
    if failed:
        raise SystemExit(f"{' '.join(argv)} exited {failed[0].returncode}:\n{failed[0].output_tail}")
    return min(runs, key=lambda r: r.wall_s)


def _figure(name: str, seconds: float, floor_s: float, command: str, peer: dict | None = None, **extra) -> dict:
    target_s, target_floor = TARGETS.get(name, (None, None))
    fig = {"name": name, "command": command, "seconds": round(seconds, 3), "target_s": target_s,
           "met": None if target_s is None else seconds <= target_s,
           "ratio_to_floor": round(seconds / floor_s, 2), "target_ratio_to_floor": target_floor,
           "met_ratio_to_floor": None if target_floor is None else seconds / floor_s <= target_floor, **extra}
    if peer is not None:
        fig["peer"] = {**peer, "seconds": round(peer["seconds"], 3)}
        fig["peer_over_figure"] = round(peer["seconds"] / seconds, 2)
    return fig


def measure(repeat: int, perturb_all: bool, naive_limit: int, say=print, discover_vs_mutmut: bool = False) -> dict:
    root = project.current().root
    load_before = _load_average()
    say("floor: python -c 'import torch' ...")
    floor = _best([PY, "-c", "import torch"], max(3, repeat), root).wall_s
    figures = []
    say("check (and its serial peer) ...")
    check = _best([*FIDELITY, "check"], repeat, root)
    serial = _best([*FIDELITY, "check", "--jobs", "1"], 1, root)
    figures.append(_figure("check", check.wall_s, floor, "fidelity check",
                           {"name": "gate suite serially", "command": "fidelity check --jobs 1", "seconds": serial.wall_s},
                           peak_process_mib=check.peak_process_mib, peak_tree_mib=check.peak_tree_mib,
                           target_peak_mib=TARGET_CHECK_MIB,
                           met_peak=None if check.peak_process_mib is None else check.peak_process_mib <= TARGET_CHECK_MIB))
    say("a comment edit and a one-line code edit, in a copy of the project ...")
    figures += _edit_figures(floor, root, say)
    say("fixtures --verify ...")
    fx = fixtures_bench.measure(repeat)
    figures.append(_figure("fixtures_verify", fx["verify_s"], floor, "fidelity fixtures --verify"))
    say("report --no-gates ...")
    with tempfile.TemporaryDirectory(prefix="fidelity-bench-report-") as out:
        report = _best([*FIDELITY, "report", "--no-gates", "--out", out], repeat, root)
    figures.append(_figure("report_no_gates", report.wall_s, floor, "fidelity report --no-gates --out TMP",
                           peak_process_mib=report.peak_process_mib))
    figures += _perturb_figures(floor, perturb_all, naive_limit, say)
    if discover_vs_mutmut:
        figures.append(_discover_figure(floor, root, say))
    return {"schema": "fidelity-bench/1", "measured_at": utc_now(), "figures": figures,
            "floor": {"command": "python -c 'import torch'", "seconds": round(floor, 3)},
            "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                        "load_average_before": load_before,
                        "load_average_after": _load_average()},
            "versions": versions()}


def _edit_figures(floor: float, root: Path, say) -> list[dict]:
    """What a comment-only edit (of one implementation file and one gate file), a one-line code edit and a
    one-function edit of the implementation file cost (edit_cost_bench.py)."""
    m = edit_cost_bench.measure(root, say, floor)
    where, stale = edit_cost_bench.EDITED_FILE, m["comment_perturb_stale"]
    comment, code, function = m["comment_check_changed"], m["code_check_changed"], m["function_check_changed"]
    plain = {"name": "plain check of the same copy", "command": "fidelity check", "seconds": m["check"]["wall_s"]}

    def run_of(step: dict) -> str:
        n = step["counts"]
        return f"{n['instances_run']} of {n['instances_run'] + n['instances_kept']} instances run"

    return [_figure("perturb_stale_comment", stale["wall_s"], floor,
                    f"fidelity perturb --stale after a comment-only edit of {where} and of the gate file "
                    f"{edit_cost_bench.EDITED_GATE_FILE}: {stale['counts']['rerun']} of "
                    f"{stale['counts']['perturbations']} re-run, {stale['counts']['reports_files_rewritten']} files "
                    f"under reports/ rewritten", **stale["counts"]),
            _figure("check_changed_comment", comment["wall_s"], floor,
                    f"fidelity check --changed after the same comment edit: {run_of(comment)}", plain, **comment["counts"]),
            _figure("check_changed", code["wall_s"], floor,
                    f"fidelity check --changed after one line of code in {where}: {run_of(code)}", plain, **code["counts"]),
            _figure("check_changed_function", function["wall_s"], floor,
                    f"fidelity check --changed after an edit of one function's body in {where} (keys by function): "
                    f"{run_of(function)}", plain, **function["counts"])]


def _load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (a busy machine's figures are to be read as such)."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _perturb_figures(floor: float, perturb_all: bool, naive_limit: int, say) -> list[dict]:
    from fidelity.spec import load_catalogue

    cat = load_catalogue()
    figures = []
    selections = [("perturb_p1_p5", ["P1..P5"], [f"P{i}" for i in range(1, 6)])]
    if perturb_all:
        selections.append(("perturb_all", ["--all"], list(cat.perturbations)))
    for name, argv, ids in selections:
        say(f"fidelity perturb {' '.join(argv)} and the naive way ...")
        ours = [cat.perturbations[i].data for i in ids if not cat.perturbations[i].data.get("subject")]
        sample = ours[:naive_limit]
        with tempfile.TemporaryDirectory(prefix="fidelity-bench-perturb-") as tmp:
            runner_s, code = perturb_bench.time_runner(argv, Path(tmp) / "runner")
            if code != 0:
                raise SystemExit(f"fidelity perturb {' '.join(argv)} exited {code}")
            if name == "perturb_p1_p5":  # again, where the first run kept its clean runs
                kept_s, code = perturb_bench.time_runner(argv, Path(tmp) / "runner")
                if code != 0:
                    raise SystemExit(f"fidelity perturb {' '.join(argv)} (again) exited {code}")
            naive_s = perturb_bench.time_naive(sample, Path(tmp)) * len(ours) / max(1, len(sample))
        scaled = "" if len(sample) == len(ours) else f" (measured on {len(sample)}, scaled to {len(ours)})"
        figures.append(_figure(name, runner_s, floor, f"fidelity perturb {' '.join(argv)} (from nothing)",
                               {"name": "naive: the whole gate suite per perturbation" + scaled,
                                "command": "python -m fidelity.bench.perturb_bench (time_naive)", "seconds": naive_s},
                               target_peer_over_figure=TARGET_RUNNER_VS_NAIVE))
        if name == "perturb_p1_p5":
            figures.append(_figure("perturb_p1_p5_kept", kept_s, floor,
                                   f"fidelity perturb {' '.join(argv)} (again: clean runs kept)",
                                   {"name": "the same command from nothing", "command": f"fidelity perturb {' '.join(argv)}",
                                    "seconds": runner_s}))
    return figures


def _discover_figure(floor: float, root: Path, say) -> dict:
    """fidelity discover beside mutmut, on discover_bench's module and the gate suite, one after the other."""
    modules = discover_bench.DEFAULT_MODULES
    say(f"fidelity discover and mutmut on {', '.join(modules)} ...")
    with tempfile.TemporaryDirectory(prefix="fidelity-bench-discover-") as tmp:
        mutmut = discover_bench.run_mutmut(root, modules, Path(tmp) / "mutmut")
        discover = discover_bench.run_discover(root, modules, Path(tmp) / "discover")
    return discover_figure(discover, mutmut, floor)


def discover_figure(discover: dict, mutmut: dict, floor: float) -> dict:
    """The discover figure: its seconds, beside mutmut's seconds per mutant times discover's mutants (the peer
    over the figure is then discover's mutants per second over mutmut's, held to discover_bench.TARGET_RATIO)."""
    for side in (mutmut, discover):
        if side.get("exit") != 0 or not side.get("mutants"):
            raise SystemExit(f"{side.get('tool', 'fidelity discover')} ({side.get('command')}) exited {side.get('exit')} "
                             f"with {side.get('mutants')} mutants:\n{side.get('error') or side.get('output_tail') or ''}")
    n = discover["mutants"]
    return _figure("discover", discover["seconds"], floor,
                   f"fidelity discover --module {' --module '.join(sorted(discover.get('modules') or {}))} --no-record: "
                   f"{n} mutants",
                   {"name": f"{mutmut['tool']} on the same module and gates, its seconds per mutant x {n} "
                            f"({mutmut['mutants']} mutants in {mutmut['seconds']:.1f} s)",
                    "command": f"mutmut {mutmut['command']}", "seconds": mutmut["seconds"] * n / mutmut["mutants"]},
                   target_peer_over_figure=discover_bench.TARGET_RATIO)


def render(bench: dict) -> str:
    """The table `main` prints: the ledger's Performance rows (report/performance.py), as plain text."""
    loads = performance.load_averages(bench["machine"])
    head = (f"floor: {bench['floor']['command']} = {bench['floor']['seconds']:.2f} s; {bench['machine']['cpu_count']} "
            f"cores, load average (1, 5, 15 min) before {loads['load_average_before']}, after {loads['load_average_after']}")
    return head + "\n" + textable.render(list(performance.HEADERS), [list(performance.cells(f)) for f in bench["figures"]],
                                         max_width=200)


def main(argv: list[str] | None = None) -> int:
    project.find().activate()  # the project of the working directory; its children learn it too
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each quick figure; the best is kept (default 2)")
    parser.add_argument("--perturb-all", action="store_true", help="also time `fidelity perturb --all` (tens of minutes)")
    parser.add_argument("--naive-limit", type=int, default=3,
                        help="time the naive runner on at most this many perturbations and scale (default 3)")
    parser.add_argument("--discover-vs-mutmut", action="store_true",
                        help="also time `fidelity discover` against mutmut on the same module and gates (minutes; "
                             "mutmut is in the dev extra)")
    parser.add_argument("--out", type=Path, help="where to write the figures (default: the project's reports/bench.json)")
    args = parser.parse_args(argv)
    bench = measure(max(1, args.repeat), args.perturb_all, max(1, args.naive_limit),
                    say=lambda text: print(text, file=sys.stderr, flush=True), discover_vs_mutmut=args.discover_vs_mutmut)
    out = args.out or project.current().reports / "bench.json"
    jsonio.write_json(out, bench)
    print(render(bench))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
