"""Blind-spot discovery: every mutant of a module through the perturbation machinery, then a verdict.

For one target module: generate its mutants (operators.py), express each as a perturbation
(one find/replace edit, unique in the file), run them all as ONE observation of the runner
(import hook, warm forked children, only the gates covering the module, nothing on disk
edited; a child stops at the first gate red by its own assertion), and classify each:

  killed       a gate went red by its own assertion (killed_by names it)
  error        only red for another reason (an exception, a timeout, a crash): not a kill
  equivalent   no gate red, and the mutant computes the same function on every probe that
               executed the mutated lines (equivalence.py)
  blind_spot   no gate red, and a probe tells the mutant from the original (the witness)
  undecided    no gate red, and no probe reached the mutated lines: a survivor whose
               meaning is not known, reported as such, never as equivalent
"""
from __future__ import annotations

import ast
import concurrent.futures as cf
import multiprocessing as mp
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from fidelity.discover import operators as ops
from fidelity.discover import equivalence, records
from fidelity.discover.reach import reach_of
from fidelity.evidence import jsonio
from fidelity.targets import locate, patching
from fidelity.perturb.runner import observe

OUTCOMES = ("killed", "error", "equivalent", "blind_spot", "undecided")


@dataclass
class MutantResult:
    id: str                # module's short name and running number: readable, shifts when the source does
    key: str               # records.mutant_key: stable while the edit is; what a spec names
    module: str
    operator: str
    line: int
    function: str | None
    description: str
    diff: str
    outcome: str = "undecided"
    killed_by: list[str] = field(default_factory=list)
    detail: str = ""
    equivalence: dict | None = None

    def to_json(self) -> dict:
        return {"id": self.id, "key": self.key, "module": self.module, "operator": self.operator, "line": self.line,
                "function": self.function, "description": self.description, "diff": self.diff,
                "outcome": self.outcome, "killed_by": self.killed_by, "detail": self.detail,
                "equivalence": self.equivalence}


@dataclass
class Discovery:
    module: str
    mutants: list[MutantResult]
    dropped: dict[str, int]
    run_ok: bool
    run_error: str | None
    seconds: float
    set_aside: list[str] = field(default_factory=list)  # gates red before any mutant (a package's findings)
    target_file: str = ""  # the module's file as its name spells it (locate.module_path)

    def counts(self) -> dict[str, dict[str, int]]:
        """operator -> outcome -> count."""
        table: dict[str, dict[str, int]] = {}
        for m in self.mutants:
            row = table.setdefault(m.operator, dict.fromkeys(OUTCOMES, 0))
            row[m.outcome] += 1
        return dict(sorted(table.items()))

    def to_json(self) -> dict:
        return jsonio.encode_floats({"module": self.module, "ok": self.run_ok, "error": self.run_error, "seconds": round(self.seconds, 2),
                "gates_set_aside": self.set_aside,
                "mutants_per_second": round(len(self.mutants) / self.seconds, 3) if self.seconds else None,
                "dropped": self.dropped, "counts": self.counts(), "mutants": [m.to_json() for m in self.mutants]})


def unique_edit(source: str, mutant) -> dict:
    """The mutant as one find/replace edit: the whole lines it touches, widened by a line at a
    time until the find text occurs exactly once in the file (the runner's rule for edits)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for text in lines:
        starts.append(starts[-1] + len(text))
    first, last = mutant.line - 1, mutant.end_line  # [first, last) in line indices
    while True:
        find = source[starts[first]:starts[last]]
        if patching.count_occurrences(source, find) == 1 or (first == 0 and last == len(lines)):
            break
        first, last = max(0, first - 1), min(len(lines), last + 1)
    replace = source[starts[first]:mutant.start] + mutant.replacement + source[mutant.end:starts[last]]
    return {"find": find, "replace": replace}


def _decide_all(module: str, path: str, source: str, survivors: list, jobs: int | None, progress):
    """Equivalence for every survivor, in forked worker processes (one decision is seconds of
    float64 probes of a module class, and the decisions are independent); yields (result, decision)."""
    if not survivors:
        return
    workers = max(1, min(len(survivors), int(jobs or os.cpu_count() or 1)))
    say = progress or (lambda event: None)
    if workers == 1:
        pool = None
        decisions = (equivalence.decide(module, path, source, text, lines) for _, lines, text in survivors)
    else:
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"))
        decisions = pool.map(equivalence.decide, *zip(*((module, path, source, text, lines)
                                                        for _, lines, text in survivors)))
    try:
        for i, ((r, _, _), decision) in enumerate(zip(survivors, decisions), 1):
            say({"event": "verdict", "message": f"[{i}/{len(survivors)}] {r.id} {r.operator} line {r.line}: "
                                                f"{decision['verdict']}"})
            yield r, decision
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _short(module: str) -> str:
    return module.rsplit(".", 1)[-1]


def discover(module: str, *, root: Path, test_paths: tuple[str, ...], fixtures_dir: Path,
             operators: list[str] | None = None, budget: int | None = None, jobs: int | None = None,
             progress=None, decide_equivalence: bool = True, environment: dict | None = None,
             batched: bool = True) -> Discovery:
    start = time.perf_counter()
    path = locate.find_source(module, locate.child_search_path(str(root)))
    source, _ = patching.read_source(path)
    generated = ops.generate(source, operators)
    mutants = generated.mutants[:budget] if budget else generated.mutants
    tree = ast.parse(source)
    results: dict[str, MutantResult] = {}
    perturbations, mutated = [], {}
    for i, m in enumerate(mutants, 1):
        mid = f"{_short(module)}.m{i}"
        edit = unique_edit(source, m)
        perturbations.append({"id": mid, "title": f"{m.operator}: {m.description}", "target": module,
                              "edits": [edit], "gates": [], "reach": reach_of(tree, m.line, m.end_line)})
        mutated[mid] = (m, patching.apply_edits(source, [edit], perturbation_id=mid, file=path))
        results[mid] = MutantResult(mid, records.mutant_key(edit), module, m.operator, m.line, m.function, m.description,
                                    patching.unified_diff(source, mutated[mid][1], locate.module_path(module, path)))
    if not perturbations:
        return Discovery(module, [], dict(generated.dropped), True, None, time.perf_counter() - start,
                         target_file=locate.module_path(module, path))
    run = observe(perturbations, repo_root=root, test_paths=test_paths, fixtures_dir=fixtures_dir, jobs=jobs,
                  progress=progress, first_red_only=True, environment=environment,
                  # someone else's package may fail gates already (its findings): those cannot tell
                  # a mutant from the original and are set aside; ours must be green
                  set_aside_red_baseline=environment is not None,
                  # each mutant runs only the instances that execute its code, in batch children
                  # that collect once and fork per mutant (perturb/batch.py)
                  trace_lines=True, batched=batched)
    if run.error:
        return Discovery(module, list(results.values()), dict(generated.dropped), False, run.error,
                         time.perf_counter() - start, target_file=locate.module_path(module, path))
    undecided_survivors = []  # (result, mutated lines, mutated source): equivalence decides them
    for seen in run.observed():
        r = results[seen["id"]]
        if seen["red_by_assertion"]:
            r.outcome, r.killed_by = "killed", [g["gate"] for g in seen["red_by_assertion"]]
        elif seen["red_other"]:
            r.outcome, r.detail = "error", seen["red_other"][0].get("detail", "")
        elif seen.get("patch_served") == 0:
            r.outcome = "blind_spot"
            r.detail = "no gate imports this module: nothing holds this code to the paper"
        elif decide_equivalence:
            if seen.get("unreached"):
                r.detail = "no gate instance executes the mutated code"
            m, text = mutated[r.id]
            undecided_survivors.append((r, (m.line, m.end_line), text))
    for r, decision in _decide_all(module, path, source, undecided_survivors, jobs, progress):
        r.equivalence, r.outcome = decision, decision["verdict"]
    return Discovery(module, list(results.values()), dict(generated.dropped), run.ok, run.error,
                     time.perf_counter() - start, list((run.baseline or {}).get("set_aside", [])),
                     target_file=locate.module_path(module, path))
