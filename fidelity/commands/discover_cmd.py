"""`fidelity discover`: generate the defects nobody wrote down and tell a blind spot from an equivalent mutant."""
from __future__ import annotations

import argparse
import contextlib
import sys

from fidelity.commands.common import EXIT_OK, EXIT_RED, EXIT_USAGE, add_json_option, print_json
from fidelity.commands.executor_options import add_executor_options, chosen_executor, executor_problem

DESCRIPTION = """\
Generate mutants of a subject's source with operators made for numerical tensor code
(a wrong axis, a transpose, a dropped term, a detach, a default, a swapped reduction, a
guard removed, ...), run each through the perturbation machinery (import hook, forked
children, only the gates covering the module, no file on disk edited), and classify it:

  killed       a gate went red by its own assertion (the gate is named)
  error        red for another reason only (an exception, a timeout): not a kill
  equivalent   no gate red, and the mutant computes the same function, in float64, on every
               probe that executed the mutated lines (the inputs tried are listed)
  blind_spot   no gate red, and a probe tells it from the original (the input and the
               difference are given): a defect the gates let through
  undecided    no gate red, and no probe reached the mutated lines: not known, never
               counted as equivalent

Modules: --module M (repeatable), or every module of --subject NAME (default: the
project's own subjects). `fidelity discover --list-operators` lists the operators.
A complete run (no --budget, no --operator) is recorded as evidence under
reports/discovery/ (one file per module; with --subject, a folder per subject), where
`fidelity check` reads it: a blind spot in the project's own code fails the check until a
gate closes it or the spec explains it beside its equation, by the key printed here:

  out_of_scope:          (or equivalent:)
    - mutant: fidelity.impl.torch.mhc:3f2a9c1b7d4e
      reason: why no gate needs to see this change

--stale: run again only the modules whose record is stale (their source, the gates covering
them or the discovery code changed since it was written): `fidelity check` is RED for a
stale record, as for stale perturbation evidence. Each stale module runs as a whole: a
mutant is the whole file with one edit, so a change anywhere in the file (a cache in front
of a function, an early return) can change any mutant's verdict, and keeping the old
verdicts of unchanged lines would not be sound. With --module, only those modules' records;
with --subject, that subject's. Nothing stale: it says so and exits 0.

--executor ray [--ray-address ADDR]: the clean runs and each batch of mutants (with
the gate instances that cover them) run as Ray tasks, on a local cluster or the one at
ADDR; the equivalence decisions stay on this machine. A unit the engine loses is red
for another reason for its gates; a lost batch's mutants are run again one by one.

Exit: 0 the run completed and found no blind spot; 1 a blind spot, or a run that cannot
be trusted (red or flaky baseline, a file changed); 2 usage errors.
"""


def add_parser(sub) -> None:
    p = sub.add_parser("discover", help="generate mutants and find the blind spots of the gates",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--module", action="append", default=[], metavar="M", help="a module to mutate (repeatable)")
    p.add_argument("--subject", default=None, metavar="NAME",
                   help="mutate this subject's modules and run its gate instances alone (a name or module:object)")
    p.add_argument("--operator", action="append", default=[], metavar="OP", help="only these operators (repeatable)")
    p.add_argument("--budget", type=int, default=None, metavar="N", help="at most N mutants per module")
    p.add_argument("--all", action="store_true", help="every mutant (the default; says so explicitly)")
    p.add_argument("--list-operators", action="store_true", help="list the operators and exit")
    p.add_argument("--stale", action="store_true",
                   help="run again only the modules whose discovery record is stale (their source, the gates covering "
                        "them or the discovery code changed since), each as a whole; with --module, only those of them")
    p.add_argument("--no-record", action="store_true",
                   help="write no discovery record even for a complete run (a trial, a benchmark)")
    p.add_argument("--jobs", type=int, default=None,
                   help="units at once (default: this machine's CPUs; with --executor ray, the cluster's)")
    add_executor_options(p)
    add_json_option(p)
    p.set_defaults(run=run)


def _usage(message: str) -> int:
    print(f"fidelity discover: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _modules_and_environment(args) -> tuple[list[str], dict | None, str | None]:
    """The modules to mutate, the children's subject variables, and the subject's name (None: ours)."""
    from fidelity.subjects import registry

    if args.subject:
        ref, subject = registry.resolve(args.subject)
        environment, name = {registry.EXTRA_ENV: ref, registry.ONLY_ENV: subject.name}, subject.name
        subjects = [subject]
    else:
        environment, name = None, None
        subjects = registry.all_subjects()
    if args.module:
        return list(dict.fromkeys(args.module)), environment, name
    modules = [m for s in subjects for mods in s.modules.values() for m in mods]
    return list(dict.fromkeys(modules)), environment, name


def _option_problem(args, operators) -> str | None:
    """Options that do not go together, as the one line to print; None when they do."""
    if args.budget is not None and (args.budget < 1 or args.all):
        return "--budget takes a positive N, and not with --all"
    if args.stale and (args.budget is not None or args.operator or args.no_record):
        return "--stale refreshes records, and only a complete run writes one: drop --budget, --operator and --no-record"
    unknown = sorted(set(args.operator) - set(operators))
    if unknown:
        return f"unknown operator(s) {', '.join(unknown)}; known: {', '.join(operators)}"
    return executor_problem(args)


def run(args) -> int:
    from fidelity.discover import operators as ops

    if args.list_operators:
        for name, op in ops.OPERATORS.items():
            print(f"{name:28} {' '.join(op.doc.split())}")
        return EXIT_OK
    problem = _option_problem(args, ops.OPERATORS)
    if problem:
        return _usage(problem)
    from fidelity import writer_lock
    from fidelity.discover import records
    from fidelity.perturb import PerturbError
    from fidelity.targets.errors import TargetNotFound
    from fidelity.subjects.registry import SubjectLoadError

    here = args.project
    tests = [here.relative(here.gates)]
    try:
        modules, environment, subject_name = _modules_and_environment(args)
        stale = _stale_modules(args, environment, subject_name, tests) if args.stale else None
    except (SubjectLoadError, records.CorruptRecord) as exc:
        return _usage(str(exc))
    if stale is not None:
        if not stale["stale"]:
            return _nothing_stale(args, stale["current"])
        modules = [s["module"] for s in stale["stale"]]
    if not modules:
        return _usage("no module to mutate: give --module M, or a subject that names its modules")
    say = (lambda e: None) if args.json else (lambda e: print(e.get("message", ""), file=sys.stderr, flush=True))
    complete = args.budget is None and not args.operator and not args.no_record
    lock = (writer_lock.writing(records.discovery_root(here.reports), "discover") if complete
            else contextlib.nullcontext())  # a partial run writes no record: nothing to keep apart
    from fidelity.perturb.executor import using

    try:
        with lock, chosen_executor(args) as executor, using(executor):
            results, written = _discover_each(modules, args, tests, environment, subject_name, complete, say,
                                              {s["module"]: "; ".join(s["reasons"]) for s in (stale or {}).get("stale", [])})
    except (TargetNotFound, PerturbError, writer_lock.FolderBusy) as exc:
        return _usage(str(exc))
    if not complete:
        say({"message": "no discovery record written (--no-record, or a partial run: --budget or --operator)"})
    if args.json:
        print_json({"ok": all(r.run_ok for r in results), "records": written, "stale": (stale or {}).get("stale", []),
                    "mutants": [m for r in results for m in r.to_json()["mutants"]],
                    "modules": [{k: v for k, v in r.to_json().items() if k != "mutants"} for r in results]})
    else:
        for r in results:
            print(_table(r))
        for path in written:
            print(f"recorded: {path}")
    blind = sum(1 for r in results for m in r.mutants if m.outcome == "blind_spot")
    return EXIT_OK if all(r.run_ok for r in results) and not blind else EXIT_RED


def _stale_modules(args, environment, subject_name, tests) -> dict:
    """{"stale": [{"module", "record", "reasons"}], "current": n}: the subject's records (the project's own by
    default; with --module only those modules'), judged by the rule check's discovery stage applies."""
    from fidelity.discover import records

    judged = records.judged(args.project.reports, args.project.root, tests, subject_name, environment)
    if args.module:
        judged = [(rec, why) for rec, why in judged if rec["module"] in args.module]
    return {"stale": [{"module": rec["module"], "record": args.project.relative(rec["_file"]), "reasons": why}
                      for rec, why in judged if why],
            "current": sum(1 for _, why in judged if not why)}


def _nothing_stale(args, current: int) -> int:
    if args.json:
        print_json({"ok": True, "records": [], "stale": [], "current": current, "mutants": [], "modules": []})
    elif current:
        print(f"discover --stale: every discovery record is current ({current} record{'s' if current != 1 else ''}): "
              f"nothing to run")
    else:
        print("discover --stale: no discovery record to refresh (`fidelity discover --module M` makes one)")
    return EXIT_OK


def _discover_each(modules, args, tests, environment, subject_name, complete, say,
                   stale_why: dict[str, str]) -> tuple[list, list[str]]:
    """Each module in turn (with --stale, its heading says why it runs again); a complete run's record is
    written as soon as its module is done."""
    from fidelity.discover import records
    from fidelity.discover.run import discover

    here = args.project
    results, written = [], []
    for module in modules:
        say({"message": f"== {module}" + (f" (stale: {stale_why[module]})" if module in stale_why else "")})
        hashes = records.current_hashes(module, here.root, tests, environment)  # of what this run sees
        result = discover(module, root=here.root, test_paths=tuple(tests), fixtures_dir=here.fixtures,
                          operators=args.operator or None, budget=args.budget, jobs=args.jobs, progress=say,
                          environment=environment)
        results.append(result)
        if complete and result.run_ok:
            written.append(str(records.write(here.reports, records.build(
                result, target_file=result.target_file, subject=subject_name, hashes=hashes))))
    return results, written


def _table(result) -> str:
    from fidelity import textable
    from fidelity.discover.run import OUTCOMES

    if result.run_error:
        return f"{result.module}: the run could not be trusted: {result.run_error}"
    counts = result.counts()
    rows = [[op, *(str(c[o]) for o in OUTCOMES)] for op, c in counts.items()]
    totals = [sum(c[o] for c in counts.values()) for o in OUTCOMES]
    rows.append(["(all)", *map(str, totals)])
    lines = [f"{result.module}: {len(result.mutants)} mutants in {result.seconds:.1f} s "
             f"({len(result.mutants) / result.seconds:.2f} per second); dropped: "
             + (", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items())) or "none")
             + (f"; {len(result.set_aside)} gates set aside, red before any mutant (the package's findings)"
                if result.set_aside else ""),
             textable.render(["operator", *OUTCOMES], rows)]
    for m in result.mutants:
        if m.outcome in ("blind_spot", "undecided"):
            why = m.detail or (m.equivalence or {}).get("witness")
            if isinstance(why, dict):
                why = f"{why['input']}: difference {why['difference']:.3g}" + (f" ({why['error']})" if why.get("error") else "")
            lines.append(f"{m.outcome.upper():10} {m.module}:{m.key} ({m.id}) line {m.line} {m.function or ''} {m.operator}: "
                         f"{m.description} -- {why}")
    return "\n".join(lines)
