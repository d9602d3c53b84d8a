"""`fidelity perturb P1..P5 | --all | --stale | --file FILE`: see each gate go red, then green again."""
from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

from fidelity.commands.common import EXIT_OK, EXIT_RED, EXIT_USAGE, add_json_option, add_specs_option, print_json
from fidelity.commands.executor_options import add_executor_options, chosen_executor, executor_problem
from fidelity.spec import load_catalogue
from fidelity.spec.loader import load_perturbation_file

DESCRIPTION = """\
Run perturbations (deliberate defects) and record the evidence that gates see them.

For the selected perturbations: the gates covering their targets pass unperturbed in
10 separate children (the clean runs), with bit-identical readings, so that a gate
failing in half of all runs is refused as flaky with probability > 0.999; a gate red
in some of them is reported flaky with the counts; a forced failure proves red is
visible; each perturbation then runs in its own child process whose import hook serves
the patched source (no file on disk is edited), and only the gates covering its target
run. A gate counts as red only when its own assertion fails; an exception, timeout or
crash is 'red for another reason'. Afterwards the same gates must be green again.
Evidence goes to the project's reports/evidence/, one file per perturbation
(<id>.json: its records by gate, JSON, pinned by hashes of gate, target and fixtures).
A folder still in the old layout (a file per gate) is refused until converted with
--convert-evidence (nothing runs; the same records, with the same hashes).

Clean runs are kept (reports/evidence/clean-runs.json) per gate instance under a hash
of everything it read (gate file, helpers, fixtures, specs, harness, versions) and
its targets' sources by the functions its runs called (an edit to a function no run
of it reached keeps them): a later run counts those whose inputs match, runs only the missing ones and
judges old and new together. An instance with 10 kept runs is not run unpatched again
(its green after is known), and a perturbation whose instances all have them is written
as soon as its child ends, so a run stopped later keeps its records.

The gates a perturbation lists (or predicts) always run: they are what it shows. A gate
that only covers its target is not run again while its record is current (the rule
--stale and `fidelity check` apply: gate file, helpers, target source, fixtures read and
edits hash as recorded), was green after, has its clean runs and saw a verdict (not a
crash or timeout); the table marks its row "record current, not re-run".
--rerun-covering runs every covering gate.

Selection: ids (P1 P3), lists (P1,P3), ranges (P1..P5), --all, --stale (only those
whose evidence is missing or stale), --file FILE.

--stale keeps the records of a perturbation whose evidence is current, and judges them
by today's specs exactly as `fidelity check` does (one rule): a gate the perturbation
lists whose current record under it is not red by its own assertion (with green after
and its clean runs) is a MISS, and the run exits 1 naming both. A gate the spec lists
now but whose record ran before it was listed (as a covering gate) is not that listed
gate's record: the perturbation runs again.

--file FILE: your own catalogue (the spec's YAML form, or a file of `perturbations:`
only). Its ids are its own namespace: any identifier (swap-axes, my.defect_1, P24),
but none the project's specs define (exit 2, naming both places). Its evidence goes to
a folder of its own, reports/catalogues/<file stem>/evidence/, never among the
project's records unless you ask (--evidence DIR); --stale reads that folder.

--observe: expect nothing, see what goes red. Every gate covering each target runs
(and any the perturbation lists); the table and --json report per perturbation every
gate red by assertion (with its reading), red for another reason, or green. In a
--file catalogue `gates` may be omitted. No evidence is written.

--executor ray [--ray-address ADDR]: each unit (a clean run, the forced failure, a
perturbation with its gate instances, a green-after part) is a Ray task, on a local
cluster or the one at ADDR; the evidence is the same as a local run's. A unit the
engine loses (a worker that dies, a lost node, a task past its time) is red for
another reason for each of its gates, and the run goes on. Progress lines say how
many units are done, running and queued.

Exit: 0 every perturbation caught and restored (with --observe: the run completed and
everything was green again, whatever went red); 1 a survivor, a miss, or a run that
cannot be trusted: a red or flaky baseline, a forced failure not seen red, a file
changed on disk, a gate not green again (with --observe only these); 2 usage, spec or
patch errors (a find matching zero or several places, a --file id the project
defines, `gates` missing without --observe).
"""


def add_parser(sub) -> None:
    import argparse
    p = sub.add_parser("perturb", help="run perturbations: each gate must go red, then green again",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ids", nargs="*", metavar="ID", help="perturbation ids, lists (P1,P2) or ranges (P1..P5)")
    p.add_argument("--all", action="store_true", help="every perturbation in the specs")
    p.add_argument("--stale", action="store_true", help="only perturbations without current evidence")
    p.add_argument("--file", type=Path, metavar="FILE",
                   help="a YAML catalogue of your own perturbations (instead of the specs'): its own ids, "
                        "its own evidence folder (reports/catalogues/<file stem>/evidence)")
    p.add_argument("--observe", action="store_true",
                   help="expect nothing: run every gate covering each target and report which went red "
                        "(by assertion, for another reason) or stayed green; writes no evidence")
    p.add_argument("--jobs", type=int, default=None,
                   help="units at once (default: this machine's CPUs; with --executor ray, the cluster's)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds per child before it is killed as hung (default 600: Triton gates under the CPU interpreter are slow)")
    p.add_argument("--rerun-covering", action="store_true",
                   help="also run again the gates that only cover a perturbation's target and whose records are "
                        "current (by default their recorded outcome stands; the listed gates always run)")
    p.add_argument("--cold-start", action="store_true",
                   help="start every child as a fresh interpreter; by default children are forked from one "
                        "process that has imported torch and pytest (a target it holds still starts cold)")
    add_executor_options(p)
    p.add_argument("--evidence", type=Path, default=None, metavar="DIR",
                   help="the evidence folder to write (and --stale to read) instead of the default: the "
                        "project's reports/evidence, or a --file catalogue's reports/catalogues/<stem>/evidence")
    p.add_argument("--reports", type=Path, default=None, metavar="DIR",
                   help="the same as --evidence DIR/evidence (kept for older scripts)")
    p.add_argument("--convert-evidence", action="store_true",
                   help="run nothing: convert the evidence folder from the old layout (a file per gate in a folder "
                        "per perturbation) to a file per perturbation, the same records with the same hashes")
    add_specs_option(p)
    add_json_option(p)
    p.set_defaults(run=run)


def expand_ids(tokens: list[str], known: list[str]) -> list[str]:
    """'P1..P3', 'P5,P7' -> ['P1','P2','P3','P5','P7']; unknown ids raise ValueError listing the known ones."""
    wanted: list[str] = []
    for token in ",".join(tokens).split(","):
        token = token.strip()
        if not token:
            continue
        m = re.fullmatch(r"P(\d+)\.\.P?(\d+)", token)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise ValueError(f"empty range {token!r}")
            span = [f"P{i}" for i in range(lo, hi + 1)]
            missing = [i for i in span if i not in known]
            if missing:
                raise ValueError(f"unknown perturbation(s) {', '.join(missing)} in {token!r}")
            wanted += span
        else:
            wanted.append(token)
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ValueError(f"unknown perturbation id(s): {', '.join(unknown)}")
    return list(dict.fromkeys(wanted))


def _known_list(known: list[str]) -> str:
    """P<n> ids in numeric order, then the others by name."""
    from fidelity.spec.catalogue import perturbation_order

    return ", ".join(sorted(known, key=perturbation_order))


def _option_problem(args) -> str | None:
    """Options that do not go together, as the one line to print; None when they do."""
    if args.ids and args.all:
        return "give ids or --all, not both"
    if args.evidence is not None and args.reports is not None:
        return "give --evidence DIR or --reports DIR (the same as --evidence DIR/evidence), not both"
    if args.observe and args.stale:
        return "--observe runs every chosen perturbation afresh and reads no evidence: drop --stale"
    if args.observe and args.rerun_covering:
        return "--observe runs every covering gate and reads no evidence: drop --rerun-covering"
    if args.observe and (args.evidence is not None or args.reports is not None):
        return "--observe writes no evidence: drop --evidence/--reports (use --json to keep what it saw)"
    if args.convert_evidence and (args.ids or args.all or args.stale or args.observe):
        return "--convert-evidence runs nothing: drop the ids, --all, --stale and --observe"
    return executor_problem(args)


def evidence_folder(args) -> Path:
    """Where this run's evidence goes (and --stale reads it): as asked, else the project's,
    else (--file) the catalogue's own, so its ids never touch the project's records."""
    from fidelity.evidence import paths

    if args.evidence is not None:
        return args.evidence.resolve()
    if args.reports is not None:
        return paths.evidence_root(args.reports.resolve())
    if args.file is not None:
        return paths.catalogue_evidence_root(args.project.reports, args.file)
    return args.project.evidence


def run(args) -> int:
    problem = _option_problem(args)
    if problem:
        return _usage(problem)
    if args.convert_evidence:
        from fidelity.commands import convert_evidence

        return convert_evidence.run(args, evidence_folder(args))
    zygote = _local_zygote(args)
    try:
        return _run_chosen(args, zygote)
    finally:
        if zygote is not None:
            zygote.close()


def _local_zygote(args):
    """The warm-start zygote every run of this command shares on the local executor (None: cold children, or
    Ray's). Where children surely run (not --stale, which may find nothing stale), it starts now, beside the
    specs' loading and the runner's preparation, not when the first child is asked for: its imports (~1.6 s,
    torch's) were most of a run with kept clean runs."""
    if args.cold_start or args.executor == "ray":
        return None
    from fidelity.perturb.stages.settings import shared_zygote  # not the runner: it imports pytest first

    zygote = shared_zygote(args.project.root, args.jobs)
    if not args.stale:
        zygote.start_now()
    return zygote


def _run_chosen(args, zygote) -> int:
    from fidelity.perturb import PerturbError
    from fidelity.targets.errors import TargetError

    cat = load_catalogue(args.specs)
    items = (load_perturbation_file(args.file, cat, require_gates=not args.observe) if args.file
             else list(cat.perturbations.values()))
    table = {i.id: i for i in items}
    known = list(table)
    if not known:
        return _usage("no perturbations defined" + (f" in {args.file}" if args.file else " in the specs"))
    try:
        chosen = known if (args.all or args.stale or args.file) and not args.ids else expand_ids(args.ids, known)
    except ValueError as exc:
        return _usage(f"{exc}. Known: {_known_list(known)}")
    if not chosen:
        return _usage(f"choose perturbations: ids, ranges (P1..P5), --all, --stale or --file. Known: {_known_list(known)}")
    here = args.project
    # where each perturbation is written, relative to the project (evidence keeps it: no machine's paths)
    perturbations = [{**table[i].data, "file": f"{here.relative(table[i].file)}:{table[i].line}"}
                     for i in chosen]
    say = (lambda e: print(e.get("message", ""), file=sys.stderr, flush=True))
    from fidelity.subjects.registry import SubjectLoadError  # subjects import torch: not for `list` or `--help`

    try:
        groups = [(subject, group, _subject_environment(subject)) for subject, group in _by_subject(perturbations)]
    except SubjectLoadError as exc:
        return _usage(str(exc))
    from fidelity import writer_lock
    from fidelity.evidence.old_layout import OldLayout, refuse

    try:
        with contextlib.nullcontext() if args.observe else writer_lock.writing(evidence_folder(args), "perturb"):
            if not args.observe:
                refuse(evidence_folder(args))  # before anything runs: its records could be neither read nor kept
            results = _run_groups(groups, args, say, zygote)
    except (writer_lock.FolderBusy, OldLayout) as exc:
        return _usage(str(exc))
    except (PerturbError, TargetError) as exc:
        # a patch that cannot be applied is the spec's to fix: say where the perturbation is written
        where = {p["id"]: p["file"] for p in perturbations}.get(getattr(exc, "perturbation_id", None))
        return _usage(f"{where}: {exc}" if where else str(exc))
    if args.json:
        print_json(results[0].to_json() if len(results) == 1 else _merged_json(results))
    else:
        print("\n\n".join(r.table() for r in results))
        print(verdict_line(results))
    return EXIT_OK if all(r.ok for r in results) else EXIT_RED


def verdict_line(results) -> str:
    """The run in one line, after the tables: a long run's verdict is not left to be read off its rows."""
    perts = [p for r in results for p in r.perturbations]
    ok = all(r.ok for r in results)
    errors = [f"{r.error_kind}: {r.error}" for r in results if r.error]
    if results[0].observe:
        text = f"perturb --observe: {'ok' if ok else 'NOT TRUSTED'}  {len(perts)} perturbations observed"
    else:
        ran = [p for p in perts if p.status == "ran"]
        caught = sum(1 for p in ran if p.red_by_assertion and not p.misses)
        counts = [f"{caught} caught by every listed gate",
                  f"{sum(1 for p in perts if p.status == 'current')} current (evidence kept, not re-run)",
                  f"{sum(1 for p in perts if p.survivor)} survived",
                  f"{sum(1 for p in perts if p.misses)} missed a listed gate",
                  f"{sum(1 for p in perts if p.status == 'not_run')} not run"]
        text = f"perturb: {'GREEN' if ok else 'RED'}  {len(perts)} perturbations: {', '.join(counts)}"
    return text + (f"; {'; '.join(errors)}" if errors else "")


def _by_subject(perturbations: list[dict]) -> list[tuple[str | None, list[dict]]]:
    """Our own subjects first, then one group per named subject, in first-seen order."""
    groups: dict[str | None, list[dict]] = {None: []}
    for p in perturbations:
        groups.setdefault(p.get("subject"), []).append(p)
    return [(s, g) for s, g in groups.items() if g]


def _subject_environment(subject: str | None) -> dict[str, str | None] | None:
    """The variables a group's children get: the named subject alone, or (None) ours."""
    from fidelity.subjects import registry

    if subject is None:
        return None
    ref, resolved = registry.resolve(subject)
    return {registry.EXTRA_ENV: ref, registry.ONLY_ENV: resolved.name}


def _run_groups(groups, args, say, zygote) -> list:
    """One runner run per group, side by side (a third-party group is a few small children, which
    would otherwise wait for ours to finish), sharing one executor (locally: one warm-start
    zygote, `zygote`); results in group order."""
    with chosen_executor(args, warm_start=not args.cold_start) as executor:
        return _run_groups_on(groups, args, say, executor, zygote)


def _run_groups_on(groups, args, say, executor, zygote) -> list:
    import concurrent.futures as cf

    from fidelity.perturb import launch
    from fidelity.perturb import run as run_perturbations

    here = args.project

    def one(subject, group, environment):
        tag = f"[{subject}] " if subject else ""
        if subject:
            say({"message": f"{tag}== perturbations of subject {subject}: {', '.join(p['id'] for p in group)}"})
        return run_perturbations(group, repo_root=here.root, evidence_dir=evidence_folder(args),
                                 test_paths=(here.relative(here.gates),), fixtures_dir=here.fixtures, jobs=args.jobs,
                                 timeout_s=args.timeout, stale_only=args.stale, observe=args.observe,
                                 progress=lambda e: say(dict(e, message=tag + e.get("message", ""))),
                                 warm_start=not args.cold_start, environment=environment, zygote=zygote,
                                 executor=executor, reuse_covering=not args.rerun_covering)

    pool = cf.ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="fidelity-group")
    try:
        futures = [pool.submit(one, *g) for g in groups]
        return [f.result() for f in futures]
    except BaseException:  # Ctrl-C (or one group's input error) lands here: the other groups stop too
        launch.stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        launch.resume()


def _merged_json(results) -> dict:
    """One object over the subject groups' runs: their perturbations (or observations) in group order."""
    parts = [r.to_json() for r in results]
    key = "observed" if results[0].observe else "perturbations"
    merged = {"ok": all(p["ok"] for p in parts), key: [], "runs": parts}
    if results[0].observe:
        merged["mode"] = "observe"
    for p in parts:
        merged[key] += p[key]
    return merged


def _usage(message: str) -> int:
    print(f"fidelity perturb: error: {message}", file=sys.stderr)
    return EXIT_USAGE
