"""`fidelity report [--check] [--no-gates | --gates-from FILE] [--subject NAME ...]`: render the ledger."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from fidelity.commands.common import EXIT_OK, EXIT_RED, EXIT_USAGE, add_json_option, add_specs_option, print_json
from fidelity.spec import load_catalogue


DESCRIPTION = """\
Render the ledger: per paper its provenance, equations (tier, status, code, gates,
accepted or not), deltas, claims (confirmed or refuted, both numbers), the subject
matrix (equations x subjects: passed / failed / not run and why), the red-to-green
table (each row OBSERVED from an evidence record or PREDICTED ONLY), blind spots,
weak gates, and the claim ledger (Sourced, Measured, Transcription, Not claimed).

Writes to reports/ (or --out): LEDGER.md, ledger.html (self-contained, with plots;
needs matplotlib for the plots), ledger.json, mutation-report.json (Stryker's
mutation-testing-report-schema), and gate-run.json when it ran the gate suite.

The subject matrix needs a gate run: by default the gate suite runs once (progress
on stderr); --gates-from reports/gate-run.json reuses a recorded run (the same
bytes on any machine); --no-gates leaves the matrix out ('not run: --no-gates').

The third-party subjects the ledger renders are part of the project: `report_subjects`
in [tool.fidelity] (or fidelity.toml) names them, so a plain `fidelity report`
reproduces the committed ledger. --subject NAME (repeatable: pot, hyper-connections,
hyper-connections-log, attn-res, an installed entry point of the group
fidelity.subjects, or module:object) replaces that list for one run; it also
runs the gate suite once per named package, on it alone (as `fidelity check
--subject` does), records those runs in gate-run.json beside ours, and adds to the
ledger a column per package in the subject matrices (passed / finding / not run,
equation by equation) and a section "Findings about third-party subjects" (per
package and equation: the gate, the instance, the reading, the message). A finding
is about that package: it changes no exit code. A recorded run read back with
--gates-from renders the same columns without running anything; --subject cannot
be combined with --gates-from or --no-gates (exit 2).

The same specs, evidence and gate run give the same bytes. --check writes nothing:
it regenerates in memory and exits 1 naming each file that differs (LEDGER.md
always; ledger.json and mutation-report.json when present), 0 when all match.
Exit 2: spec errors, an unreadable --gates-from file, an unknown --subject (the
message lists the known names), --subject with --gates-from or --no-gates. Exit 1
also when a --subject gate run does not complete (pytest exit other than 0 or 1).
"""


def add_parser(sub) -> None:
    import argparse
    p = sub.add_parser("report", help="render the ledger: Markdown, HTML with plots, JSON, mutation report",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    gates = p.add_mutually_exclusive_group()
    gates.add_argument("--no-gates", action="store_true", help="do not run the gate suite; no subject matrix")
    gates.add_argument("--gates-from", type=Path, metavar="FILE",
                       help="use a recorded gate run (e.g. reports/gate-run.json) instead of running the suite")
    p.add_argument("--subject", action="append", default=[], metavar="NAME|module:object",
                   help="also run the gate suite on this third-party subject alone (repeatable; e.g. --subject pot "
                        "--subject hyper-connections --subject attn-res) and show its conformance per equation in "
                        "the subject matrix, and its findings in their own section; findings change no exit code. "
                        "Default: the project's report_subjects (pyproject.toml [tool.fidelity])")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if reports/LEDGER.md (or a present ledger.json / "
                        "mutation-report.json) differs from what would be generated")
    p.add_argument("--no-html", action="store_true", help="skip ledger.html and its plots")
    p.add_argument("--reports", type=Path, default=None,
                   help="where the evidence is read (DIR/evidence) (default: the project's reports/)")
    p.add_argument("--out", type=Path, default=None, help="where the files are written or checked (default: --reports)")
    p.add_argument("--fixtures", type=Path, default=None, help="fixtures directory (default: the project's fixtures/)")
    add_specs_option(p)
    add_json_option(p)
    p.set_defaults(run=run)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _third_party_references(names: list[str]) -> list[str]:
    """--subject values -> `module:object` references, one per subject name, sorted by name.

    SubjectLoadError for an unknown name (listing the known ones), one of our own subjects,
    a reference that does not import, or two references of the same name.
    """
    from fidelity.subjects import registry

    named = registry.named_references()
    known = f"third-party subjects known here: {', '.join(named)}; or give module:object"
    refs: dict[str, str] = {}
    for name in names:
        if ":" not in name and name not in named:
            builtin = {registry.load_reference(r).name for r in registry.project_references()}
            if name in builtin:
                raise registry.SubjectLoadError(f"{name!r} is one of our own subjects, in every gate run already; "
                                                f"--subject names someone else's implementation ({known})")
            raise registry.SubjectLoadError(f"no subject named {name!r}; {known}")
        ref, subject = registry.resolve(name)
        if ref in registry.project_references():
            raise registry.SubjectLoadError(f"{name!r} is one of our own subjects, in every gate run already; "
                                            f"--subject names someone else's implementation ({known})")
        if refs.get(subject.name, ref) != ref:
            raise registry.SubjectLoadError(
                f"two subjects are named {subject.name!r} ({refs[subject.name]!r} and {ref!r})")
        refs[subject.name] = ref
    return [refs[n] for n in sorted(refs)]


def run(args) -> int:
    from fidelity.evidence.old_layout import OldLayout, refuse
    from fidelity.evidence.paths import evidence_root
    from fidelity.report import gaterun, outputs

    start = time.perf_counter()
    subjects: list[str] = []
    named = args.subject or ([] if args.gates_from or args.no_gates else list(args.project.report_subjects))
    if named:
        # imported here: the subject registry imports torch (~1-2 s), which --no-gates never needs
        from fidelity.subjects.registry import SubjectLoadError

        if args.gates_from or args.no_gates:
            why = ("a recorded run is rendered as recorded, with the third-party runs it holds; record one with "
                   "`fidelity report --subject NAME ...`" if args.gates_from else
                   "without a gate run there is no subject matrix to add a column to")
            print(f"fidelity report: error: --subject runs the gate suite on that package; it cannot be combined "
                  f"with {'--gates-from' if args.gates_from else '--no-gates'} ({why})", file=sys.stderr)
            return EXIT_USAGE
        try:
            subjects = _third_party_references(named)
        except SubjectLoadError as exc:
            origin = "--subject" if args.subject else f"report_subjects in {args.project.config_file.name}"
            print(f"fidelity report: error: {origin}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    cat = load_catalogue(args.specs)
    fixtures = args.fixtures or args.project.fixtures
    reports = args.reports or args.project.reports
    out_dir = args.out or reports
    opts = outputs.Options(repo_root=args.project.root, reports_dir=reports, out_dir=out_dir, fixtures_dir=fixtures,
                           gates="none" if args.no_gates else "file" if args.gates_from else "run",
                           gates_from=args.gates_from, html=not (args.no_html or args.check),
                           subjects=tuple(subjects))
    try:
        refuse(evidence_root(reports))  # before the gate suite runs: the ledger reads every record
        files, gate_run = outputs.generate(cat, opts, _say)
    except (gaterun.GateRunError, OldLayout) as exc:
        print(f"fidelity report: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except gaterun.ThirdPartyRunError as exc:
        print(f"fidelity report: error: {exc}", file=sys.stderr)
        return EXIT_RED
    elapsed = time.perf_counter() - start
    if args.check:
        problems = outputs.check(files, out_dir)
        if args.json:
            print_json({"ok": not problems, "seconds": round(elapsed, 3),
                        "differ": [{"file": str(p), "diff": d} for p, d in problems]})
        else:
            for path, what in problems:
                print(f"fidelity report --check: {path} differs from what `fidelity report` generates now"
                      + (" (missing)" if what == "missing" else ""), file=sys.stderr)
                if what != "missing":
                    print(what, file=sys.stderr)
            if not problems:
                print(f"report: {outputs.LEDGER_MD} is up to date ({elapsed:.2f} s)")
        return EXIT_RED if problems else EXIT_OK
    from fidelity import writer_lock

    try:
        with writer_lock.writing(out_dir, "report"):  # two reports' files must not interleave
            written = outputs.write(files, out_dir, gate_run)
    except writer_lock.FolderBusy as exc:
        print(f"fidelity report: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print_json({"ok": True, "seconds": round(time.perf_counter() - start, 3),
                    "written": [{"file": str(p), "bytes": p.stat().st_size} for p in written]})
    else:
        for p in written:
            print(f"wrote {p} ({p.stat().st_size:,} bytes)")
        print(f"report: {len(written)} files in {time.perf_counter() - start:.2f} s")
    return EXIT_OK
