"""Benchmark: mutants per second of `fidelity discover` against mutmut 3.8.1, on the same modules and gates.

    python -m fidelity.bench.discover_bench [--module M ...] [--quick] [--out FILE]

Both sides run in this one invocation, on this machine, one after the other:

- mutmut: `mutmut run` in a COPY of the project in a temporary directory (mutmut writes
  `mutants/` next to its config; the copy's pyproject.toml gets the `[tool.mutmut]` table,
  the real one is never touched), mutating only the modules' files, with the gate suite
  (tests/gates) as its tests. It needs `process_isolation = "forkserver"` here: a plain fork
  after torch was imported hangs. Its outcomes come from `mutmut results --all true`.
  Install it with `pip install -e ".[bench]"`.
- discover: `fidelity discover --module M ... --json` in the project itself.

Seconds are the wall clock of each whole command as a user runs it (mutant generation, the
baseline and coverage runs, every mutant), measured here; mutants per second is mutants over
those seconds, and the ratio is discover / mutmut. Each tool's own figure (mutmut's
"mutations/second" counts only its mutant phase) is printed beside it. Mutants are those
each tool reports an outcome for (mutmut's "not checked" excluded, its "no tests" included).

--quick: mutmut runs only the first QUICK_PER_FUNCTION mutants of each function it mutates
(`mutmut run` with name patterns), and discover gets a `--budget` of as many mutants per module
(QUICK_BUDGET when mutmut did not run). Start-up costs then dominate both sides: the figures say
little about speed; the mode exists so that the script can be run in well under a minute.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from fidelity import project

MUTMUT_VERSION = "3.8.1"
DEFAULT_MODULES = ["fidelity.impl.torch.sinkhorn"]
GATES = "tests/gates"
QUICK_PER_FUNCTION = 3
QUICK_BUDGET = 10  # discover's --budget under --quick when mutmut did not run
TARGET_RATIO = 5.0  # issue 13: at least 5x mutmut's mutants per second

# Copied beside the source into mutmut's `mutants/` (tests/ and pyproject.toml it copies itself).
ALSO_COPY = ["fixtures", "specs", "reports", "tests", "pyproject.toml"]
# Not worth copying into the temporary project: environments, caches, mutmut's own output.
COPY_IGNORE = (".git", ".venv", "venv", "mutants", "__pycache__", ".pytest_cache", ".hypothesis",
               ".fidelity-cache", ".benchmarks", ".mypy_cache", ".ruff_cache", "*.egg-info")

_RESULT_LINE = re.compile(r"^\s*(?P<name>\S+?):\s+(?P<status>[a-z][a-z ]*?)\s*$")
_MUTMUT_RATE = re.compile(r"([0-9.]+) mutations/second")


def module_file(module: str, root: Path) -> str:
    """The module's source file, relative to root, as mutmut's only_mutate matches it."""
    base = Path(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if (root / candidate).is_file():
            return candidate.as_posix()
    raise SystemExit(f"discover_bench: no source file for module {module} under {root}")


def mutmut_config(files: list[str], *, source_paths: list[str], tests: list[str],
                  also_copy: list[str] = ALSO_COPY) -> dict:
    """The `[tool.mutmut]` table for the copy."""
    return {
        "source_paths": source_paths,
        "only_mutate": files,
        "also_copy": also_copy,
        "pytest_add_cli_args_test_selection": tests,
        "pytest_add_cli_args": ["-p", "no:cacheprovider"],
        "process_isolation": "forkserver",
    }


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def write_mutmut_config(pyproject: Path, table: dict) -> None:
    """Put `table` as [tool.mutmut] in pyproject (created when missing), replacing one already there."""
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    kept, skipping = [], False
    for line in text.splitlines():
        header = line.strip()
        if header.startswith("["):
            name = header.strip("[]").replace(" ", "")
            skipping = name == "tool.mutmut" or name.startswith("tool.mutmut.")
        if not skipping:
            kept.append(line)
    body = "\n".join(kept).rstrip("\n")
    table_text = "[tool.mutmut]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in table.items())
    pyproject.write_text((body + "\n\n" if body else "") + table_text, encoding="utf-8")


def copy_project(root: Path, dest: Path) -> Path:
    """A copy of the project at dest (environments, caches and mutmut output left out)."""
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(*COPY_IGNORE), symlinks=True)
    return dest


def function_names(path: Path) -> list[str]:
    """mutmut's keys (x_f, xǁClassǁmethod) for the functions of a source file, undecorated or not."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(f"x_{node.name}")
        elif isinstance(node, ast.ClassDef):
            names += [f"x\u01c1{node.name}\u01c1{n.name}" for n in node.body
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return names


def quick_patterns(modules: list[str], per_function: int = QUICK_PER_FUNCTION) -> list[str]:
    """`mutmut run` name patterns for the first `per_function` mutants of every function of the modules.
    A pattern (with a `*`) rather than a name: mutmut looks a plain name up in its coverage table
    and fails on a function no test reached or that it did not mutate (a decorated one)."""
    return [f"{m}.*__mutmut_{i}" for m in modules for i in range(1, per_function + 1)]


def parse_results(text: str) -> dict[str, str]:
    """{mutant name: status} from `mutmut results --all true` (lines `    NAME: STATUS`)."""
    out = {}
    for line in text.splitlines():
        m = _RESULT_LINE.match(line)
        if m and "__mutmut_" in m["name"]:
            out[m["name"]] = m["status"]
    return out


def mutant_module(name: str) -> str:
    """The module of a mutmut mutant name (`pkg.mod.x_f__mutmut_3` -> `pkg.mod`)."""
    parts = name.split(".")
    for i in range(len(parts) - 1, -1, -1):
        if parts[i].startswith(("x_", "x\u01c1")):
            return ".".join(parts[:i])
    return name.rsplit(".", 1)[0]


def summarise_mutmut(statuses: dict[str, str]) -> dict:
    """Counts by outcome, overall and per module; "not checked" (not run) is left out of the mutants."""
    checked = {k: v for k, v in statuses.items() if v != "not checked"}
    per_module: dict[str, Counter] = {}
    for name, status in checked.items():
        per_module.setdefault(mutant_module(name), Counter())[status] += 1
    return {"mutants": len(checked), "counts": dict(Counter(checked.values())),
            "not_checked": len(statuses) - len(checked),
            "modules": {m: {"mutants": sum(c.values()), "counts": dict(c)} for m, c in sorted(per_module.items())}}


def mutmut_command() -> list[str]:
    """The `mutmut` script of this interpreter's environment (never `python -m mutmut`, which mutmut warns
    breaks its trampolines), else the one on PATH."""
    script = Path(sys.executable).parent / "mutmut"
    if script.exists():
        return [str(script)]
    found = shutil.which("mutmut")
    if found:
        return [found]
    raise SystemExit(f'discover_bench: mutmut is not installed (pip install -e ".[bench]", mutmut=={MUTMUT_VERSION})')


def mutmut_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("mutmut")
    except Exception:  # noqa: BLE001 - not installed
        return None


def _child_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != project.ROOT_ENV}  # the copy is its own project
    env["FIDELITY_CACHE_DIR"] = str(work / "fidelity-cache")
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def run_mutmut(root: Path, modules: list[str], work: Path, *, tests: list[str] = (GATES,), quick: bool = False,
               per_function: int = QUICK_PER_FUNCTION, source_paths: list[str] | None = None,
               max_children: int | None = None) -> dict:
    """Copy root to work/project, configure mutmut there, time `mutmut run`, and count its outcomes."""
    copy = copy_project(root, work / "project")
    files = [module_file(m, copy) for m in modules]
    sources = source_paths or [modules[0].split(".")[0]]
    also_copy = [p for p in ALSO_COPY if (copy / p).exists()]
    write_mutmut_config(copy / "pyproject.toml",
                        mutmut_config(files, source_paths=sources, tests=list(tests), also_copy=also_copy))
    env = _child_env(work)
    cmd = mutmut_command()
    run_args = [*cmd, "run", *(["--max-children", str(max_children)] if max_children else []),
                *(quick_patterns(modules, per_function) if quick else [])]
    start = time.perf_counter()
    proc = subprocess.run(run_args, cwd=copy, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    results = subprocess.run([*cmd, "results", "--all", "true"], cwd=copy, capture_output=True, text=True, env=env)
    statuses = parse_results(results.stdout)
    summary = summarise_mutmut(statuses)
    survivors = survivor_diffs(cmd, copy, env, statuses)
    rate = _MUTMUT_RATE.findall(proc.stdout)
    # mutmut skips a function under a decorator: say how many it mutated of the files' functions
    functions = sorted({f"{m}.{f}" for m, file in zip(modules, files) for f in function_names(copy / file)})
    mutated = sorted({name.rsplit("__mutmut_", 1)[0] for name in statuses})
    return {"tool": f"mutmut {mutmut_version()}", "command": " ".join(run_args[1:]), "exit": proc.returncode,
            "files": files, "tests": list(tests), "seconds": seconds, **summary,
            "functions": functions, "functions_mutated": mutated, "survivors": survivors,
            "functions_not_mutated": sorted(set(functions) - set(mutated)),
            "mutants_per_second": summary["mutants"] / seconds if seconds else None,
            "reported_mutants_per_second": float(rate[-1]) if rate else None,
            "output_tail": (proc.stdout + proc.stderr)[-2000:] if proc.returncode else ""}


def survivor_diffs(cmd: list[str], copy: Path, env: dict[str, str], statuses: dict[str, str]) -> dict[str, str]:
    """{survived mutant: its diff (`mutmut show`)}: what a person classifies (message text, device, genuine)."""
    return {name: subprocess.run([*cmd, "show", name], cwd=copy, capture_output=True, text=True, env=env).stdout
            for name, status in sorted(statuses.items()) if status == "survived"}


def discover_command(modules: list[str], budget: int | None = None) -> list[str]:
    return [sys.executable, "-m", "fidelity", "discover", *[a for m in modules for a in ("--module", m)],
            *(["--budget", str(budget)] if budget else []), "--no-record", "--json"]  # a benchmark is no evidence


def summarise_discover(payload: dict) -> dict:
    """Totals from `fidelity discover --json`: {"modules": [{"module", "seconds", "mutants_per_second",
    "counts"}...], "mutants": [{"outcome", ...}...]}."""
    mutants = payload.get("mutants") or []
    counts = Counter(m.get("outcome", "?") for m in mutants)
    modules = payload.get("modules") or []
    if isinstance(modules, dict):
        modules = [{"module": k, **v} for k, v in modules.items()]
    reported_s = sum(float(m.get("seconds") or 0) for m in modules)
    return {"mutants": len(mutants), "counts": dict(counts),
            "modules": {m.get("module"): {k: m.get(k) for k in ("seconds", "mutants_per_second", "counts")}
                        for m in modules},
            "reported_seconds": reported_s or None,
            "reported_mutants_per_second": len(mutants) / reported_s if reported_s else None}


def run_discover(root: Path, modules: list[str], work: Path, *, budget: int | None = None,
                 command: list[str] | None = None) -> dict:
    """Time `fidelity discover --module M ... [--budget N] --json` in the project and read its figures."""
    cmd = command or discover_command(modules, budget)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=_child_env(work))
    seconds = time.perf_counter() - start
    result = {"tool": "fidelity discover", "command": " ".join(cmd[1:]), "exit": proc.returncode, "seconds": seconds}
    try:
        payload = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {**result, "mutants": None, "mutants_per_second": None, "error": (proc.stdout + proc.stderr)[-2000:]}
    summary = summarise_discover(payload)
    return {**result, **summary, "mutants_per_second": summary["mutants"] / seconds if seconds else None}


def ratio(discover: dict, mutmut: dict) -> float | None:
    d, m = discover.get("mutants_per_second"), mutmut.get("mutants_per_second")
    return d / m if d and m else None


def _counts_text(counts: dict, first: tuple[str, ...] = ("killed", "survived")) -> str:
    """`killed K, survived S, other N, ...`: the named outcomes always, the rest by count."""
    rest = sorted((k for k in counts if k not in first), key=lambda k: (-counts[k], k))
    return ", ".join(f"{k} {counts.get(k, 0)}" for k in (*first, *rest))


def render(figures: dict) -> str:
    mm, dc = figures["mutmut"], figures["discover"]
    lines = [f"modules: {', '.join(figures['modules'])}; gates: {' '.join(figures.get('tests') or [GATES])}; cpu cores: {figures['cpu_cores']}"
             + ("; --quick: a few mutants a side, start-up costs dominate: not a speed claim" if figures["quick"] else "")]
    if mm.get("mutants"):
        own = mm.get("reported_mutants_per_second")
        lines.append(f"mutmut   : {mm['mutants']:5d} mutants {mm['seconds']:8.1f} s {mm['mutants_per_second']:8.2f} mutants/s"
                     f"  ({_counts_text(mm['counts'])})" + (f"; mutmut's own figure {own:.2f}/s" if own else "")
                     + (f"; functions mutated {len(mm['functions_mutated'])} of {len(mm['functions'])}"
                        if mm.get("functions") else "")
                     + (f"; exit {mm['exit']}" if mm["exit"] else ""))
    elif mm.get("skipped"):
        lines.append("mutmut   : skipped (--skip-mutmut)")
    else:
        lines.append(f"mutmut   : no mutants counted (exit {mm.get('exit')})\n{mm.get('output_tail', '')}")
    if dc.get("mutants") is not None:
        own = dc.get("reported_mutants_per_second")
        lines.append(f"discover : {dc['mutants']:5d} mutants {dc['seconds']:8.1f} s {dc['mutants_per_second'] or 0:8.2f} mutants/s"
                     f"  ({_counts_text(dc['counts'], first=('killed',))})" + (f"; its own seconds give {own:.2f}/s" if own else "")
                     + (f"; exit {dc['exit']}" if dc["exit"] else ""))
    elif dc.get("skipped"):
        lines.append("discover : skipped (--skip-discover)")
    else:
        last = (dc.get("error") or "").strip().splitlines()[-1:]
        lines.append(f"discover : did not run (exit {dc.get('exit')}): {last[0] if last else 'no output'}")
    r = figures.get("ratio")
    lines.append("ratio    : discover / mutmut mutants per second = "
                 + (f"{r:.2f} x (target >= {TARGET_RATIO:g} x: {'met' if r >= TARGET_RATIO else 'MISSED'})" if r else "n/a"))
    return "\n".join(lines)


def main(argv: list[str] | None = None, *, discover_cmd: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", dest="modules", metavar="M",
                        help=f"a module to mutate (repeatable; default {DEFAULT_MODULES[0]})")
    parser.add_argument("--quick", action="store_true", help="a few mutants a side (a smoke run, not a speed claim)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON to this file")
    parser.add_argument("--tests", action="append", metavar="PATH",
                        help=f"a test file or folder mutmut runs (repeatable; default {GATES})")
    parser.add_argument("--max-children", type=int, help="mutmut's workers (default: its own, the cpu count)")
    parser.add_argument("--skip-discover", action="store_true", help="time mutmut only")
    parser.add_argument("--skip-mutmut", action="store_true", help="time discover only")
    args = parser.parse_args(argv)
    modules = args.modules or DEFAULT_MODULES
    root = project.find().root
    figures = {"modules": modules, "tests": args.tests or [GATES], "quick": args.quick, "cpu_cores": os.cpu_count(), "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory(prefix="fidelity-discover-bench-") as tmp:
        work = Path(tmp)
        figures["mutmut"] = ({"exit": None, "mutants": None, "skipped": True} if args.skip_mutmut else
                             run_mutmut(root, modules, work / "mutmut", tests=args.tests or [GATES], quick=args.quick,
                                        max_children=args.max_children))
        budget = None
        if args.quick:  # as many mutants as mutmut ran, per module
            budget = max(1, (figures["mutmut"].get("mutants") or QUICK_BUDGET * len(modules)) // len(modules))
        figures["discover"] = ({"exit": None, "mutants": None, "skipped": True} if args.skip_discover else
                               run_discover(root, modules, work / "discover", budget=budget, command=discover_cmd))
    figures["ratio"] = ratio(figures["discover"], figures["mutmut"])
    print(render(figures))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    ok = all(figures[k].get("exit") in (0, None) for k in ("mutmut", "discover"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
