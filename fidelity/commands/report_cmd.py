"""`fidelity report [--check] [--no-gates | --gates-from FILE]`: render the ledger."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from fidelity.commands.common import EXIT_OK, EXIT_RED, EXIT_USAGE, add_json_option, add_specs_option, print_json
from fidelity.spec import load_catalogue

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

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

The same specs, evidence and gate run give the same bytes. --check writes nothing:
it regenerates in memory and exits 1 naming each file that differs (LEDGER.md
always; ledger.json and mutation-report.json when present), 0 when all match.
Exit 2: spec errors, an unreadable --gates-from file.
"""


def add_parser(sub) -> None:
    import argparse
    p = sub.add_parser("report", help="render the ledger: Markdown, HTML with plots, JSON, mutation report",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    gates = p.add_mutually_exclusive_group()
    gates.add_argument("--no-gates", action="store_true", help="do not run the gate suite; no subject matrix")
    gates.add_argument("--gates-from", type=Path, metavar="FILE",
                       help="use a recorded gate run (e.g. reports/gate-run.json) instead of running the suite")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if reports/LEDGER.md (or a present ledger.json / "
                        "mutation-report.json) differs from what would be generated")
    p.add_argument("--no-html", action="store_true", help="skip ledger.html and its plots")
    p.add_argument("--reports", type=Path, default=REPO_ROOT / "reports",
                   help="where the evidence is read (DIR/evidence) (default: the project's reports/)")
    p.add_argument("--out", type=Path, default=None, help="where the files are written or checked (default: --reports)")
    p.add_argument("--fixtures", type=Path, default=None, help="fixtures directory (default: the project's fixtures/)")
    add_specs_option(p)
    add_json_option(p)
    p.set_defaults(run=run)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(args) -> int:
    from fidelity.report import gaterun, outputs

    start = time.perf_counter()
    cat = load_catalogue(args.specs)
    fixtures = args.fixtures or REPO_ROOT / "fixtures"
    out_dir = args.out or args.reports
    opts = outputs.Options(repo_root=REPO_ROOT, reports_dir=args.reports, out_dir=out_dir, fixtures_dir=fixtures,
                           gates="none" if args.no_gates else "file" if args.gates_from else "run",
                           gates_from=args.gates_from, html=not (args.no_html or args.check))
    try:
        files, gate_run = outputs.generate(cat, opts, _say)
    except gaterun.GateRunError as exc:
        print(f"fidelity report: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
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
    written = outputs.write(files, out_dir, gate_run)
    if args.json:
        print_json({"ok": True, "seconds": round(time.perf_counter() - start, 3),
                    "written": [{"file": str(p), "bytes": p.stat().st_size} for p in written]})
    else:
        for p in written:
            print(f"wrote {p} ({p.stat().st_size:,} bytes)")
        print(f"report: {len(written)} files in {time.perf_counter() - start:.2f} s")
    return EXIT_OK
