"""Generate the ledger's files in memory; write them, or check them against the disk.

Files (in the output directory, reports/ by default):
  LEDGER.md             Markdown, reads well on GitHub
  ledger.html           one self-contained page with the plots
  ledger.json           the gathered data
  mutation-report.json  the perturbations and the discovered mutants of our code in Stryker's
                        mutation-testing-report-schema
  gate-run.json         the gate run behind the subject matrix (only when the suite ran), with
                        the third-party subjects' runs when `--subject` asked for them

`check` regenerates the text outputs in memory (no plots) and names every file
that differs: LEDGER.md always (missing counts as differing), ledger.json and
mutation-report.json when they exist. ledger.html is not compared: its PNG bytes
depend on the installed matplotlib and FreeType.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

LEDGER_MD = "LEDGER.md"
LEDGER_HTML = "ledger.html"
LEDGER_JSON = "ledger.json"
MUTATION_REPORT = "mutation-report.json"
GATE_RUN = "gate-run.json"
CHECKED_IF_PRESENT = (LEDGER_JSON, MUTATION_REPORT)


@dataclass
class Options:
    repo_root: Path
    reports_dir: Path            # where evidence is read (reports/evidence/...)
    out_dir: Path                # where the files go (default: reports_dir)
    fixtures_dir: Path
    gates: str = "run"           # "run" | "none" | "file"
    gates_from: Path | None = None
    html: bool = True            # draw plots and render the HTML page
    subjects: tuple[str, ...] = ()   # with gates="run": third-party subjects (module:object), each run alone


def _gate_run(opts: Options, say):
    """(record or None, how the ledger describes it, record to write or None).

    A fresh run and the same run read back with --gates-from are described in the
    same words, so `fidelity report` and `fidelity report --check --gates-from
    reports/gate-run.json` give the same LEDGER.md.
    """
    from fidelity.report import gaterun
    from fidelity.report.shown_paths import display_path

    if opts.gates == "none":
        return None, "not run: --no-gates", None
    if opts.gates == "file":
        record = gaterun.load(opts.gates_from)
        return record, f"the run recorded in {display_path(opts.gates_from, opts.repo_root)}", None
    record = gaterun.run(opts.repo_root, opts.fixtures_dir, say)
    if opts.subjects:
        record["third_party"] = gaterun.run_third_party(opts.repo_root, opts.fixtures_dir, list(opts.subjects), say)
    return record, f"the run recorded in {display_path(Path(opts.out_dir) / GATE_RUN, opts.repo_root)}", record


def generate(cat, opts: Options, say=lambda msg: None) -> tuple[dict[str, str], dict | None]:
    """({file name: text}, the gate-run record to write or None)."""
    from fidelity.report import document, jsonreport, markdown, model, stryker

    record, note, to_write = _gate_run(opts, say)
    ledger = model.gather(cat, repo_root=opts.repo_root, reports_dir=opts.reports_dir,
                          fixtures_dir=opts.fixtures_dir, gate_run=record, gates_note=note)
    doc = document.build(ledger)
    files = {LEDGER_MD: markdown.render(doc), LEDGER_JSON: jsonreport.render(ledger),
             MUTATION_REPORT: jsonreport.render(stryker.build(ledger, opts.repo_root))}
    if opts.html:
        from fidelity.report import html, plots

        drawn, unavailable = plots.draw_all(ledger, opts.fixtures_dir)
        if unavailable:
            say(f"report: {unavailable}")
        files[LEDGER_HTML] = html.render(doc, drawn, unavailable)
    return files, to_write


def write(files: dict[str, str], out_dir: Path, gate_run: dict | None = None) -> list[Path]:
    from fidelity.evidence import jsonio
    from fidelity.report import gaterun

    written = []
    if gate_run is not None:
        files = {**files, GATE_RUN: gaterun.dumps(gaterun.keep_time(gate_run, Path(out_dir) / GATE_RUN))}
    for name, text in files.items():
        path = Path(out_dir) / name
        jsonio.write_atomic(path, text)
        path.chmod(0o644)  # the temporary file was private; a report is for reading
        written.append(path)
    return written


def check(files: dict[str, str], out_dir: Path, diff_lines: int = 40) -> list[tuple[Path, str]]:
    """[(path, what differs)] for every checked file that is not what would be generated now."""
    problems = []
    for name in (LEDGER_MD, *CHECKED_IF_PRESENT):
        path = Path(out_dir) / name
        if not path.is_file():
            if name == LEDGER_MD:
                problems.append((path, "missing"))
            continue
        on_disk = path.read_text(encoding="utf-8")
        if on_disk == files[name]:
            continue
        problems.append((path, _first_difference(on_disk.splitlines(), files[name].splitlines(), name, diff_lines)))
    return problems


def _first_difference(old: list[str], new: list[str], name: str, diff_lines: int) -> str:
    """Where `old` (on disk) and `new` (generated now) first differ, as a unified diff of a window there.
    Only the window is diffed: difflib over a whole stale ledger.json (megabytes, thousands of changed
    lines) ran for over half an hour before printing its first 40 lines."""
    start = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    end = 0  # lines both end with, after the first difference
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    changed_old, changed_new = len(old) - end - start, len(new) - end - start
    window = slice(max(0, start - 3), start + diff_lines)
    diff = list(difflib.unified_diff(old[window], new[window], fromfile=f"{name} (on disk)",
                                     tofile=f"{name} (generated now)", lineterm=""))
    head = (f"first difference at line {start + 1}; from there {changed_old} lines on disk and {changed_new} "
            f"generated now differ (hunk line numbers below count from line {window.start + 1})")
    return "\n".join([head, *diff[:diff_lines]])
