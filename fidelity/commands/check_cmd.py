"""`fidelity check`: the CI verdict. Every stage must be green for exit 0.

Stages, in order (if the specs do not load, no later stage runs):
  specs     every spec loads and validates
  fixtures  every fixture re-derives identically from its oracle
  claims    every source claim checked by its oracle (a refuted claim is a
            finding about the source, reported, never a failure of check)
  code      every spec code location (module:qualname) imports, and every
            implemented equation names one
  gates     the gate suite (tests/gates) is green on every available subject
            and device; missing subjects or devices are reported as not run
  evidence  every gate has current evidence of going red by its own assertion
            under a perturbation (and green again); every implemented equation
            is covered by an accepted gate; every perturbation is caught; and,
            as `fidelity perturb` demands, every gate a perturbation lists is
            red under THAT perturbation (accepted by another is not enough)
            and every gate it lists or predicts exists in the suite
  discovery every blind spot `fidelity discover` recorded in the project's code
            is closed by a gate or explained beside its equation in the spec

In the text, what failed comes first: evidence that an edit made stale (records
that accepted their gate when they ran) is one line per target module, saying
what it holds back and the `fidelity perturb` command that re-runs it, after the
real failures; --json (and --json-file) lists every problem, stale ones included.

--changed runs, of the gate suite, only the instances whose inputs changed since
the last check on this machine (each instance's results are kept in the cache
under a hash of what it reads); the others' results, red ones included, are read
as they were. What it reads counts by meaning (a comment or docstring changes
nothing) and, for the modules it targets, by function: every check hears
which functions of them its process called, so the next edit to a function no
call reached keeps its result. The fixtures stage reads the last clean
verification whose inputs (fixture files, specs, the builder and oracle modules,
versions) hash the same instead of recomputing every oracle. Every other stage runs in full. Plain check
runs every instance and recomputes every fixture.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fidelity.commands.common import (EXIT_OK, EXIT_RED, EXIT_USAGE, add_json_option, add_specs_option, positive_int,
                                      print_json)
from fidelity.spec import SpecError, load_catalogue


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="the CI verdict: specs, fixtures, claims, gates, evidence",
                       description=__doc__.split("\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--subject", metavar="NAME|module:object", action="append",
                   help="check someone else's implementation instead: an adapter (hyper-connections, attn-res, pot), "
                        "an installed entry point of the group fidelity.subjects, or module:object. Its deviations "
                        "are findings, reported equation by equation; the exit code is 0 unless --strict. Given "
                        "again, each subject is judged on its own instances of one gate run (--json: under "
                        "'subjects', one entry each, as a run of it alone reports 'conformance' and 'gates')")
    p.add_argument("--strict", action="store_true", help="with --subject: exit 1 when any gate finds a deviation")
    p.add_argument("--jobs", "-j", type=positive_int, metavar="N",
                   help="processes that run the gate suite's files at a time, each forked after one collection "
                        "(default: one per core, never more than its test files; 1: a plain serial run). Every N "
                        "reports the same instances in the same order")
    p.add_argument("--changed", action="store_true",
                   help="run only the gate instances whose inputs (gate file, helpers, fixtures, specs, targets' "
                        "sources, harness, versions) changed since the last gate run of check on this machine (targets "
                        "by the functions a --changed run heard called), and read "
                        "the others' results from it; the fixtures and claims are not recomputed, nor the subjects imported "
                        "by the code stage, when their inputs hash as at the last clean run of that stage; plain check "
                        "runs and recomputes everything")
    add_specs_option(p)
    add_json_option(p)
    p.add_argument("--json-file", type=Path, metavar="FILE",
                   help="also write the JSON report (what --json prints) to FILE, while the text goes to the "
                        "terminal: one run, read by a person and a script")
    p.set_defaults(run=run)


def run(args) -> int:
    report: dict = {"ok": False, "stages": []}
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, flush=True))
    try:
        cat = load_catalogue(args.specs)
    except SpecError as exc:
        return _stopped(args, report, "specs", exc.to_json(), exc)
    report["stages"].append({"stage": "specs", "ok": True, "files": [str(f) for f in cat.files]})
    report["equations"] = [{"id": e.id, "paper": e.paper, "tier": e.data["tier"], "status": e.data["status"]}
                           for e in cat.equations.values()]
    say(f"specs     ok   {len(cat.files)} files, {len(cat.papers)} papers, {len(cat.equations)} equations, "
        f"{len(cat.claims)} claims, {len(cat.perturbations)} perturbations")

    if args.subject:
        if args.changed:
            print("fidelity check: error: --changed reads this project's own kept gate run; with --subject every "
                  "instance runs (leave out --changed)", file=sys.stderr)
            return EXIT_USAGE
        return _conformance(cat, args, say, report)
    refused = _evidence_in_old_layout(args, report)
    if refused is not None:
        return refused
    from fidelity.check import claims_stage, code_stage, discovery_stage, evidence_stage, fixtures_stage
    from fidelity.gaterun import gates_stage

    with gates_stage.start(args) as suite:  # the suite's workers run while every stage that does not read it does
        for stage in (fixtures_stage, claims_stage, code_stage):
            result = stage.run(cat, args, say)
            if "claims" in result:
                report["claims"] = result.pop("claims")
            report["stages"].append(result)
        evidence = evidence_stage.judge_evidence(cat)  # the records judged; the gate rows come after
        discovery_said: list[tuple] = []  # said after the evidence stage, in the stages' order
        say_later = lambda *said: discovery_said.append(said)  # noqa: E731
        # the discovery records are judged against the gate index: the cached one while it is current; else
        # the one the gate run collects (after it), not one collected first in a process of its own
        index = suite.index
        discovery = None if index is None else discovery_stage.run(cat, args, say_later, index=lambda: index)
        gates = gates_stage.run(cat, args, say, suite)
        if discovery is None:
            discovery = discovery_stage.run(cat, args, say_later, index=suite.index_of_run)
    report["gates"] = gates.pop("gates")
    report["stages"].append(gates)
    acceptance = evidence_stage.run(cat, args, say, gate_rows=report["gates"], evidence=evidence)
    report["equations"] = acceptance.pop("equations")
    report["perturbations"] = acceptance.pop("perturbations")
    report["stages"].append(acceptance)
    for said in discovery_said:
        say(*said)
    report["stages"].append(discovery)
    report["ok"] = all(s["ok"] for s in report["stages"])
    _write_json_file(args, report)
    if args.json:
        print_json(report)
    else:
        print("check: " + ("GREEN" if report["ok"] else "RED"))
    return EXIT_OK if report["ok"] else EXIT_RED


def _evidence_in_old_layout(args, report: dict) -> int | None:
    """EXIT_USAGE, said, while the project's evidence is in the old layout (a file per gate): nothing is
    judged from records that can be neither read whole nor skipped (fidelity.evidence.old_layout)."""
    from fidelity import project
    from fidelity.evidence.old_layout import OldLayout, refuse

    try:
        refuse(project.current().evidence)
    except OldLayout as exc:
        return _stopped(args, report, "evidence", str(exc), exc)
    return None


def _stopped(args, report: dict, stage: str, error, exc: Exception) -> int:
    """A stage that stops the check before the others run: recorded, said (JSON or one RED line), exit 2."""
    report["stages"].append({"stage": stage, "ok": False, "error": error})
    _write_json_file(args, report)
    if args.json:
        print_json(report)
    else:
        print(f"{stage:<9} RED  {exc}", file=sys.stderr)
    return EXIT_USAGE


def _write_json_file(args, report: dict) -> None:
    if getattr(args, "json_file", None) is not None:
        args.json_file.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")


def _conformance(cat, args, say, report) -> int:
    from fidelity.gaterun import conformance
    from fidelity.gaterun.subject_gate_files import UnknownGateFiles
    from fidelity.subjects.registry import SubjectLoadError

    try:
        results = conformance.run_each(cat, args.subject, args, say)
    except (SubjectLoadError, UnknownGateFiles) as exc:
        print(f"fidelity check: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as exc:  # the gate run itself broke: not a finding about the package
        print(f"fidelity check: error: the gate run on {', '.join(args.subject)} did not complete: {exc}",
              file=sys.stderr)
        return EXIT_RED
    judged = [{"conformance": result, "gates": result.pop("gates")} for result in results]
    if len(judged) == 1:
        report.update(judged[0])
    else:
        report["subjects"] = judged
    report["ok"] = all(result["ok"] for result in results)
    _write_json_file(args, report)
    if args.json:
        print_json(report)
    return EXIT_OK if report["ok"] else EXIT_RED
