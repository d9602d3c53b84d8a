"""Markdown and HTML say the same things; the same inputs give the same bytes; --check catches a stale
LEDGER.md; matplotlib stays out of `fidelity --help` and of the Markdown ledger."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ledger_toy import G_DOUBLE, P1_SAID, gate_run_record

from fidelity.report import blocks, document, html, markdown, model, outputs, pagescript, plots
from fidelity.report.sections import plots as plot_section

REPO = Path(__file__).resolve().parents[2]


def ledger_of(toy, gate_run=None, note="not run: --no-gates"):
    return model.gather(toy.catalogue(), repo_root=toy.root, reports_dir=toy.reports, fixtures_dir=toy.fixtures,
                        gate_run=gate_run, gates_note=note)


def md_table(text: str, heading: str) -> list[list[str]]:
    """The first table after `heading`, as rows of cells (header first)."""
    part = text.split(heading, 1)[1]
    block = []
    for line in part.splitlines()[1:]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            break
    return [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in block if not row.startswith("| ---")]


def test_markdown_red_to_green_rows_say_observed_or_predicted_only(toy):
    toy.standard_evidence()
    text = markdown.render(document.build(ledger_of(toy)))
    table = md_table(text, "### Red to green")
    header, rows = table[0], table[1:]
    assert header == ["perturbation", "gate", "outcome", "observed red reading", "what the gate said",
                      "predicted reading", "green after", "when", "basis"]
    by = {(r[0].split("`")[1], r[1].strip("`")): dict(zip(header, r)) for r in rows}
    p1 = by[("P1", "test_toy.py::test_double")]
    assert p1["observed red reading"] == "0.5000001" and p1["predicted reading"] == "0.5"
    assert p1["what the gate said"] == P1_SAID.replace("|", "\\|")  # its message less the node id, escaped
    assert p1["basis"] == "**OBSERVED**" and p1["when"] == "2026-11-29T10:00:00Z"
    p3 = next(v for k, v in by.items() if k[0] == "P3")
    assert p3["basis"] == "**PREDICTED ONLY**" and p3["observed red reading"] == "—" and p3["when"] == "—"
    assert p3["what the gate said"] == "—"
    p4 = next(v for k, v in by.items() if k[0] == "P4")
    assert p4["basis"] == "**OBSERVED, STALE**"
    for row in by.values():
        if "PREDICTED ONLY" in row["basis"]:
            assert row["observed red reading"] == "—"


def test_markdown_has_every_part_of_a_paper(toy):
    toy.standard_evidence()
    text = markdown.render(document.build(ledger_of(toy, gate_run_record(), "recorded run")))
    for heading in ("## A toy paper (toy)", "### Provenance", "### Equations", "### Deltas", "### Claims",
                    "### Subject matrix", "### Red to green", "### Blind spots", "### Weak gates",
                    "### Claim ledger", "#### Sourced (an external document named)",
                    "#### Measured (by which gate, in which run)",
                    "#### Transcription (tier b, no executable reference)",
                    "#### Not claimed (status not-implemented)"):
        assert heading in text, heading
    assert "[2501.00001v2](https://arxiv.org/abs/2501.00001v2)" in text
    assert "```diff" in text and "+    return x + 1.0" in text                  # the survivor's diff
    assert "**WEAK**" in text and "**refuted**" in text and "27.12" in text
    matrix = md_table(text, "### Subject matrix")
    assert matrix[0] == ["equation", "torch", "triton"]
    row = {r[0]: r for r in matrix[1:]}["`toy.eq1`"]
    assert row[1].startswith("**passed**") and row[2] == "**not run**"
    assert "`triton`: subject triton not run: triton is not installed" in text


def test_no_gates_is_said_in_the_markdown(toy):
    text = markdown.render(document.build(ledger_of(toy)))
    assert "Equations x subjects: **not run: --no-gates**." in text


def test_markdown_escapes_what_would_break_a_table():
    doc = blocks.Document("t")
    doc.add(blocks.Table(("a", "b"), (("x | y", blocks.Code("p|q")),)))
    line = markdown.render(doc).splitlines()[2]
    assert line == "| x \\| y | `p\\|q` |"


def test_html_is_self_contained(toy):
    toy.standard_evidence()
    ledger = ledger_of(toy)
    page = html.render(document.build(ledger), {"separation": b"\x89PNG fake"}, None)
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    refs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page)
    external = [r for r in refs if not (r.startswith("#") or r.startswith("data:"))]
    assert external == ["https://arxiv.org/abs/2501.00001v2"]            # plain links to arXiv only
    assert "<link" not in page and "@import" not in page and "url(" not in page
    # one inline script, no src, allowed by the sha256 of its exact bytes and by nothing looser
    assert page.count("<script") == 1 and f"<script>{pagescript.SCRIPT}</script>" in page
    directives = dict(d.strip().split(" ", 1) for d in html.CSP.split(";"))
    assert directives["script-src"] == f"'{pagescript.SCRIPT_HASH}'" and html.CSP in page
    assert 'src="data:image/png;base64,' in page
    assert page.count('<span class="tag predicted">PREDICTED ONLY</span>') == 1
    # the toy holds neither Sinkhorn nor mHC: the plots of their fixtures are not its plots, not "not drawn"
    assert "plot not drawn" not in page and 'id="plot-sinkhorn_error"' not in page


def test_a_plot_of_a_mechanism_the_project_holds_says_when_it_is_not_drawn(toy):
    ledger = ledger_of(toy)
    ledger["coverage"]["rows"].append({"mechanism": "sinkhorn", "kind": "module", "cells": {}})
    page = html.render(document.build(ledger), {}, None)
    assert 'id="plot-sinkhorn_error"' in page and 'id="plot-composite_distance"' not in page
    assert "plot not drawn: no data for this plot" in page


def test_html_says_plots_unavailable_without_matplotlib(toy):
    page = html.render(document.build(ledger_of(toy)), {}, "plots unavailable: matplotlib is not installed")
    generic = [name for name, mechanism, _ in plot_section.PLOTS if mechanism is None]  # the toy's only plots
    assert page.count("plots unavailable: matplotlib is not installed") == len(generic) == 1
    assert "<img" not in page


def test_plots_unavailable_when_matplotlib_cannot_be_imported(toy, monkeypatch):
    from fidelity.report import plots

    monkeypatch.setitem(sys.modules, "matplotlib", None)                   # import matplotlib -> ImportError
    drawn, why = plots.draw_all(ledger_of(toy), toy.fixtures)
    assert drawn == {} and why.startswith("plots unavailable: matplotlib is not installed")


def test_sinkhorn_plot_reads_its_fixture_and_runs_no_oracle(tmp_path):
    from fidelity.report import plots

    series = plots.sinkhorn_series(REPO / "fixtures")                     # sinkhorn.plot_trajectories's curves
    assert [(s["fixture"], s["input"]) for s in series] == [
        ("sinkhorn.cross_ratio_2x2", "logits"), ("sinkhorn.exact_limit_n3", "logits"),
        ("sinkhorn.exact_limit_n4", "logits"), ("sinkhorn.extreme_offsets", "logits_minus200"),
        ("sinkhorn.extreme_offsets", "logits_plus200"), ("sinkhorn.extreme_offsets", "logits_row_minus400"),
        ("sinkhorn.slow_2x2", "logits")]
    assert all(s["t"] == list(range(1, 21)) and len(s["error"]) == 20 for s in series)
    assert series[0]["error"][0] == 0.07736994978271063                    # max |M(1) - limit|, cross_ratio_2x2
    assert plots.sinkhorn_series(tmp_path) == []                           # no such fixture: no plot, no oracle
    source = (REPO / "fidelity" / "report" / "plots.py").read_text()
    assert "fidelity.oracles" not in source


def options(toy, out: Path, html_too: bool = True) -> outputs.Options:
    return outputs.Options(repo_root=toy.root, reports_dir=toy.reports, out_dir=out, fixtures_dir=REPO / "fixtures",
                           gates="none", html=html_too)


def test_same_inputs_give_the_same_bytes(toy, tmp_path):
    pytest.importorskip("matplotlib")
    toy.standard_evidence()
    first, _ = outputs.generate(toy.catalogue(), options(toy, tmp_path))
    second, _ = outputs.generate(toy.catalogue(), options(toy, tmp_path))
    assert set(first) == {"LEDGER.md", "ledger.json", "mutation-report.json", "ledger.html"}
    for name in first:
        assert first[name] == second[name], name
    assert first["ledger.html"].count('src="data:image/png;base64,') == 1  # its one plot (separation) has data
    assert "tEXtSoftware" not in first["ledger.html"]


def test_png_bytes_are_deterministic_and_carry_no_software_tag(toy):
    pytest.importorskip("matplotlib")
    from fidelity.report import plots

    toy.standard_evidence()
    ledger = ledger_of(toy)
    a, _ = plots.draw_all(ledger, REPO / "fixtures")
    b, _ = plots.draw_all(ledger, REPO / "fixtures")
    for name in ("sinkhorn_error", "composite_distance"):
        assert isinstance(a[name], bytes) and a[name] == b[name], name
        assert a[name].startswith(b"\x89PNG") and b"Software" not in a[name] and b"matplotlib" not in a[name]
    assert isinstance(a["separation"], bytes)                               # toy P1 recorded rtol: a separation


def _cli(argv: list[str]) -> int:
    """`fidelity report ...` as a user runs it, on the project found from the working directory."""
    from fidelity.cli import main

    return main(["report", *argv])


def test_check_passes_after_report_and_names_a_stale_ledger(toy, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(toy.root)  # the toy is the project
    toy.standard_evidence()
    out = tmp_path / "out"
    common = ["--specs", str(toy.specs), "--reports", str(toy.reports), "--out", str(out),
              "--fixtures", str(toy.fixtures), "--no-gates"]
    assert _cli([*common, "--check"]) == 1                                   # nothing written yet
    assert "LEDGER.md differs" in capsys.readouterr().err
    assert _cli([*common, "--no-html"]) == 0
    written = {p.name for p in out.iterdir()}
    assert written == {"LEDGER.md", "ledger.json", "mutation-report.json"}
    capsys.readouterr()
    assert _cli([*common, "--check"]) == 0
    ledger = out / "LEDGER.md"
    ledger.write_text(ledger.read_text().replace("double triples", "double quadruples"))
    assert _cli([*common, "--check"]) == 1
    err = capsys.readouterr().err
    assert f"{ledger} differs" in err and "double quadruples" in err
    assert _cli([*common, "--no-html"]) == 0
    toy.record("P3", "tests/gates/test_toy.py::test_half", "red_by_assertion", reading=0.33)  # new evidence
    assert _cli([*common, "--check"]) == 1


def test_gates_from_a_recorded_run(toy, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(toy.root)  # the toy is the project
    common, out = toy.report_args(tmp_path, gate_run_record())
    assert _cli(common) == 0
    text = (out / "LEDGER.md").read_text()
    assert "| `toy.eq1` | **passed** 1 of 1 gates | **not run** |" in text
    assert not (out / "gate-run.json").exists()                             # a reused run is not rewritten
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert _cli([*common[:-1], str(bad)]) == 2
    assert "not a gate run record" in capsys.readouterr().err


def test_matplotlib_is_not_imported_for_help_or_markdown(toy):
    code = (
        "import sys, argparse\n"
        "from fidelity import cli\n"
        "from fidelity.commands import report_cmd\n"
        "p = argparse.ArgumentParser(); s = p.add_subparsers(); report_cmd.add_parser(s)\n"
        "assert 'matplotlib' not in sys.modules and 'fidelity.report.plots' not in sys.modules\n"
        "from pathlib import Path\n"
        "from fidelity.spec import load_catalogue\n"
        "from fidelity.report import outputs\n"
        f"root = Path({str(toy.root)!r})\n"
        "o = outputs.Options(repo_root=root, reports_dir=root / 'reports', out_dir=root / 'out',\n"
        "                    fixtures_dir=root / 'fixtures', gates='none', html=False)\n"
        "files, _ = outputs.generate(load_catalogue(root / 'specs'), o)\n"
        "assert 'LEDGER.md' in files\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported without a plot'\n"
        "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_report_without_a_gate_run_does_not_import_torch(toy, tmp_path):
    """torch costs ~1-2 s to import; only a gate run (its subjects, the coverage table's mechanisms) needs it."""
    toy.standard_evidence()
    code = ("import sys\nfrom fidelity.cli import main\n"
            f"rc = main(['report', '--no-gates', '--no-html', '--out', {str(tmp_path / 'out')!r}])\n"
            "assert rc == 0, rc\n"
            "assert 'torch' not in sys.modules, 'torch imported by a report without a gate run'\n"
            "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=toy.root,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr
    assert (tmp_path / "out" / "LEDGER.md").is_file()


def test_report_help_lists_its_options():
    code = ("import argparse, sys\nfrom fidelity.commands import report_cmd\n"
            "p = argparse.ArgumentParser(prog='fidelity'); s = p.add_subparsers(); report_cmd.add_parser(s)\n"
            "p.parse_args(['report', '--help'])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0
    for option in ("--check", "--no-gates", "--gates-from", "--no-html", "--specs", "--reports", "--out", "--subject"):
        assert option in proc.stdout
    assert G_DOUBLE  # the toy names are importable here too


def test_a_fresh_gate_run_and_the_same_run_read_back_give_the_same_ledger(toy, tmp_path, monkeypatch):
    from fidelity.report import gaterun

    monkeypatch.setattr(gaterun, "run", lambda root, fixtures, say: gate_run_record())
    out = tmp_path / "reports"
    fresh = outputs.Options(repo_root=toy.root, reports_dir=toy.reports, out_dir=out, fixtures_dir=toy.fixtures,
                            gates="run", html=False)
    files, record = outputs.generate(toy.catalogue(), fresh)
    outputs.write(files, out, record)
    assert (out / "gate-run.json").is_file()
    again = outputs.Options(repo_root=toy.root, reports_dir=toy.reports, out_dir=out, fixtures_dir=toy.fixtures,
                            gates="file", gates_from=out / "gate-run.json", html=False)
    files_again, nothing = outputs.generate(toy.catalogue(), again)
    assert nothing is None and files_again == files
    assert outputs.check(files_again, out) == []


def test_sinkhorn_plot_has_integer_iteration_ticks_and_tells_its_curves_apart():
    pytest.importorskip("matplotlib")
    from fidelity.report import plots

    series = plots.sinkhorn_series(REPO / "fixtures")
    ax = plots._sinkhorn(series).axes[0]
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks      # no 2.5, 7.5
    styles = [(line.get_marker(), line.get_linestyle()) for line in ax.get_lines() if line.get_label()[0] != "_"]
    assert len(styles) == len(series) and len(set(styles)) == len(styles)  # overlapping curves stay apart


def test_a_zero_separation_is_drawn_as_zero_and_left_out_ones_are_named(toy):
    pytest.importorskip("matplotlib")
    from fidelity.report import plots

    ax = plots._separation([{"label": "a", "separation": 0.0}, {"label": "b", "separation": 50.0}]).axes[0]
    assert any(t.get_text() == "0: no separation" for t in ax.texts)       # said, not drawn at the axis floor
    toy.standard_evidence()
    ledger = ledger_of(toy)
    assert "Not in the separation plot" not in markdown.render(document.build(ledger))   # every one computed
    ledger["separations"].append({**ledger["separations"][0], "separation": None, "gate": G_DOUBLE, "readers": []})
    text = markdown.render(document.build(ledger))
    assert "Not in the separation plot: 1 predictions" in text and "`test_toy.py::test_double`" in text


def test_a_stale_ledger_is_named_by_its_first_difference_and_a_window_of_diff(tmp_path):
    """report --check diffs only a window at the first difference: difflib over a whole stale ledger.json
    (megabytes, thousands of changed lines) ran for over half an hour before printing 40 lines."""
    from fidelity.report import outputs

    generated = "\n".join(f'  "path": "reports/evidence/P{i}.json",' for i in range(5000))
    (tmp_path / "LEDGER.md").write_text(generated.replace("P7.json", "P7/old.json").replace("P9.json", "P9/old.json"),
                                        encoding="utf-8")
    [(path, said)] = outputs.check({"LEDGER.md": generated}, tmp_path, diff_lines=10)
    first = said.splitlines()[0]
    assert path == tmp_path / "LEDGER.md"
    assert first == ("first difference at line 8; from there 3 lines on disk and 3 generated now differ "
                     "(hunk line numbers below count from line 5)")
    assert '-  "path": "reports/evidence/P7/old.json",' in said and '+  "path": "reports/evidence/P7.json",' in said
    assert len(said.splitlines()) <= 11
