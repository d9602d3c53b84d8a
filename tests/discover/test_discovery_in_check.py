"""`fidelity check` fails on a blind spot `fidelity discover` recorded until a gate closes it or the
spec explains it beside its equation. The toy is the project `fidelity init` writes (which
discover finds clean), with one function added whose default no gate reaches."""
import json
import os
from pathlib import Path

import pytest
from toy_project import COUNTS_ITS_COLLECTIONS, fidelity


SHARPENED = '''

def sharpened(logits, factor=2.0):
    """Logits scaled for a sharper softmax: no gate calls it, so nothing holds its default."""
    return logits * factor
'''


def stage(report, name):
    return next(s for s in report["stages"] if s["stage"] == name)


def discovery_stage_of(root):
    """What `fidelity check --json` at `root` reports as its discovery stage, by the stage check runs, here:
    the rest of check (its gate suite: ~8 s a project) says nothing about blind spots. The whole command
    runs in test_check_fails_naming_the_default_no_gate_reaches; conftest puts the project back after."""
    from fidelity import project
    from fidelity.check import discovery_stage
    from fidelity.spec import load_catalogue

    here = project.load(root).activate()
    return discovery_stage.run(load_catalogue(here.specs), None, lambda *said: None)


@pytest.fixture(scope="module")
def discovered(tmp_path_factory, perturbed_init_project):
    # init, perturb --all and check --json: the run's one (conftest), the rest in a copy of its project
    root = perturbed_init_project.copy(tmp_path_factory.mktemp("scratch") / "mypaper")
    before = perturbed_init_project.check_report
    module = root / "mypaper" / "softmax.py"
    module.write_text(module.read_text() + SHARPENED)
    assert fidelity("perturb", "--stale", cwd=root).returncode == 0  # the module changed: its evidence again
    found = fidelity("discover", "--module", "mypaper.softmax", "--json", cwd=root)
    return root, before, found


def test_before_any_discovery_the_stage_is_green_and_says_nothing_was_recorded(discovered):
    _, before, _ = discovered
    assert before["ok"] and stage(before, "discovery") == {"stage": "discovery", "ok": True, "problems": [],
                                                            "notes": [], "records": []}


def test_discover_records_what_it_found_and_exits_1_on_a_blind_spot(discovered):
    root, _, found = discovered
    assert found.returncode == 1, found.stderr[-2000:]
    report = json.loads(found.stdout)
    [path] = report["records"]
    record = json.loads((root / "reports" / "discovery" / "mypaper.softmax.json").read_text())
    assert os.path.samefile(path, root / "reports" / "discovery" / "mypaper.softmax.json")
    assert record["schema"] == "fidelity.discover/1" and record["subject"] is None
    assert [m["key"] for m in record["mutants"]] == [m["key"] for m in report["mutants"]]


def _default_mutants(report):
    return [m for m in report["mutants"] if m["operator"] == "parameter_default" and m["function"] == "sharpened"]


def test_check_fails_naming_the_default_no_gate_reaches(discovered):
    root, _, found = discovered
    defaults = _default_mutants(json.loads(found.stdout))
    assert defaults and all(m["outcome"] == "blind_spot" for m in defaults)
    check = fidelity("check", "--json-file", str(root.parent / "check.json"), cwd=root)  # one run: text and JSON
    report = json.loads((root.parent / "check.json").read_text())
    assert check.returncode == 1 and not report["ok"]
    assert [s["stage"] for s in report["stages"] if not s["ok"]] == ["discovery"]
    problems = stage(report, "discovery")["problems"]
    for m in defaults:
        assert any(f"unexplained blind spot mypaper.softmax:{m['key']}" in p for p in problems), problems
    assert "discovery RED  unexplained blind spot mypaper.softmax:" in check.stdout and "check: RED" in check.stdout


def test_explaining_every_blind_spot_beside_its_equation_turns_the_discovery_stage_green(discovered, tmp_path):
    import shutil

    root, _, found = discovered
    explained = tmp_path / "explained"
    shutil.copytree(root, explained)
    blind = [m for m in json.loads(found.stdout)["mutants"] if m["outcome"] == "blind_spot"]
    entries = "".join(f'      - mutant: "mypaper.softmax:{m["key"]}"\n        reason: "the test explains it"\n'
                      for m in blind)
    spec = explained / "specs" / "mypaper.yaml"
    text = spec.read_text()
    anchor = '      - "mypaper.softmax:tempered_softmax"\n'
    spec.write_text(text.replace(anchor, anchor + "    out_of_scope:\n" + entries))
    discovery = discovery_stage_of(explained)
    assert discovery["ok"], discovery
    [row] = discovery["records"]
    assert len(row["blind_spots"]) == len(blind)
    assert all(b["explained"] == {"kind": "out_of_scope", "reason": "the test explains it", "equation": "mypaper.eq1"}
               for b in row["blind_spots"])


def test_a_killed_mutant_explained_as_equivalent_is_red_naming_its_gate_and_one_out_of_scope_is_a_note(discovered,
                                                                                                      tmp_path):
    import shutil

    root, _, found = discovered
    contradicted = tmp_path / "contradicted"
    shutil.copytree(root, contradicted)
    mutants = json.loads(found.stdout)["mutants"]
    blind = [m for m in mutants if m["outcome"] == "blind_spot"]
    said_equivalent, now_covered = [m for m in mutants if m["outcome"] == "killed"][:2]
    entry = '      - mutant: "mypaper.softmax:{}"\n        reason: "the test says so"\n'.format
    spec = contradicted / "specs" / "mypaper.yaml"
    anchor = '      - "mypaper.softmax:tempered_softmax"\n'
    spec.write_text(spec.read_text().replace(anchor, anchor
                                             + "    out_of_scope:\n" + "".join(entry(m["key"]) for m in blind + [now_covered])
                                             + "    equivalent:\n" + entry(said_equivalent["key"])))
    discovery = discovery_stage_of(contradicted)
    [problem] = discovery["problems"]  # every blind spot is explained: the equivalence a gate refutes is all
    assert problem.startswith(f"mypaper.softmax:{said_equivalent['key']} is explained as equivalent beside mypaper.eq1 "
                              f"({spec}:"), problem
    assert f"but {', '.join(said_equivalent['killed_by'])} went red on it" in problem, problem
    assert not discovery["ok"]
    assert discovery["notes"] == [f"mypaper.softmax:{now_covered['key']} is explained beside mypaper.eq1 but is killed "
                                  "now: the entry can go"]


def test_an_undecided_mutant_fails_the_stage_until_a_gate_kills_it_or_its_equation_explains_it(discovered, tmp_path):
    import shutil

    root, _, found = discovered
    undecided = tmp_path / "undecided"
    shutil.copytree(root, undecided)
    path = undecided / "reports" / "discovery" / "mypaper.softmax.json"
    record = json.loads(path.read_text())
    unjudged = [m for m in record["mutants"] if m["outcome"] == "blind_spot"]
    for m in unjudged:  # as discover records a survivor no probe reached: no witness, never equivalent
        m["outcome"], m["equivalence"] = "undecided", {"verdict": "undecided", "inputs": [], "max_difference": None,
                                                       "witness": "no probe executed the mutated lines"}
    path.write_text(json.dumps(record))
    discovery = discovery_stage_of(undecided)
    assert not discovery["ok"]
    for m in unjudged:
        assert any(p.startswith(f"unexplained undecided mutant mypaper.softmax:{m['key']} ") for p in discovery["problems"])
    [row] = discovery["records"]
    assert row["current"] and row["blind_spots"] == [] and len(row["undecided"]) == len(unjudged)

    spec = undecided / "specs" / "mypaper.yaml"
    anchor = '      - "mypaper.softmax:tempered_softmax"\n'
    spec.write_text(spec.read_text().replace(anchor, anchor + "    out_of_scope:\n" + "".join(
        f'      - mutant: "mypaper.softmax:{m["key"]}"\n        reason: "the test explains it"\n' for m in unjudged)))
    discovery = discovery_stage_of(undecided)
    assert discovery["ok"], discovery["problems"]
    assert all(u["explained"] and u["explained"]["equation"] == "mypaper.eq1" for u in discovery["records"][0]["undecided"])


def test_an_entry_naming_no_recorded_mutant_is_refused(discovered, tmp_path):
    import shutil

    root, _, _ = discovered
    wrong = tmp_path / "wrong"
    shutil.copytree(root, wrong)
    spec = wrong / "specs" / "mypaper.yaml"
    anchor = '      - "mypaper.softmax:tempered_softmax"\n'
    spec.write_text(spec.read_text().replace(anchor, anchor + '    equivalent:\n      - mutant: "mypaper.softmax:000000000000"\n'
                                                              '        reason: "a typo"\n'))
    problems = discovery_stage_of(wrong)["problems"]
    assert any("mypaper.softmax:000000000000 is explained beside mypaper.eq1" in p and "has no such mutant" in p
               for p in problems)


def test_a_record_of_a_changed_module_is_stale_and_its_blind_spots_still_count(discovered, tmp_path):
    import shutil

    root, _, _ = discovered
    moved = tmp_path / "moved"
    shutil.copytree(root, moved)
    module = moved / "mypaper" / "softmax.py"
    module.write_text(module.read_text() + "\nEDITED = 1\n")
    discovery = discovery_stage_of(moved)
    assert not discovery["ok"] and discovery["problems"]
    assert any(p.startswith("the discovery record of mypaper.softmax is stale (the source of mypaper.softmax "
                            "changed)") for p in discovery["problems"])
    assert any(p.startswith("unexplained blind spot mypaper.softmax:") for p in discovery["problems"])


def test_a_record_moved_with_its_checkout_is_still_current(discovered, tmp_path):
    import shutil

    root, _, _ = discovered
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(root, elsewhere)
    discovery = discovery_stage_of(elsewhere)
    assert [r["current"] for r in discovery["records"]] == [True], discovery["notes"]


def test_a_corrupt_record_is_named_not_skipped(discovered, tmp_path):
    import shutil

    root, _, _ = discovered
    broken = tmp_path / "broken"
    shutil.copytree(root, broken)
    (broken / "reports" / "discovery" / "mypaper.softmax.json").write_text('{"schema": "fidelity.discover/1", ')
    discovery = discovery_stage_of(broken)
    assert not discovery["ok"] and "mypaper.softmax.json: not readable JSON" in discovery["problems"][0]


def test_no_record_writes_nothing(discovered, tmp_path):
    import shutil

    root, _, _ = discovered
    trial = tmp_path / "trial"
    shutil.copytree(root, trial)
    shutil.rmtree(trial / "reports" / "discovery")
    run = fidelity("discover", "--module", "mypaper.softmax", "--no-record", "--json", cwd=trial)
    assert run.returncode == 1 and json.loads(run.stdout)["records"] == []
    assert not (trial / "reports" / "discovery").exists()


UNRELATED_GATE = '''import pytest


@pytest.mark.gate(equations=["mypaper.eq1"], targets=["mypaper.mechanism"])
def test_a_gate_on_another_module():
    assert 1 + 1 == 2
'''


def test_a_gate_on_another_module_leaves_the_record_current_and_an_edit_to_a_covering_gate_does_not(
        discovered, tmp_path):
    import shutil

    root, _, _ = discovered
    grown = tmp_path / "grown"
    shutil.copytree(root, grown)
    (grown / "tests" / "gates" / "test_unrelated.py").write_text(UNRELATED_GATE)
    discovery = discovery_stage_of(grown)
    assert [r["current"] for r in discovery["records"]] == [True], discovery["notes"]
    covering = grown / "tests" / "gates" / "test_tempered_softmax.py"
    covering.write_text(covering.read_text() + "\nEDITED = 1\n")
    discovery = discovery_stage_of(grown)
    assert [r["stale_reasons"] for r in discovery["records"]] == [["the gates changed"]], discovery["notes"]


def test_an_edit_to_a_gate_library_module_the_covering_gates_import_makes_the_record_stale(
        discovered, tmp_path, monkeypatch):
    # fidelity.gates lies outside the project's test paths, so the edit is made where the key reads it: the
    # meaning of fidelity/gates/compare.py (which the toy's gates assert with) reads as edited code
    import shutil

    from fidelity.discover import records
    root, _, _ = discovered
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    meaning = records.meaning_sha256
    edited = lambda name: lambda path, *memo: ("edited" if Path(path).parts[-2:] == ("gates", name)
                                               else meaning(path, *memo))
    monkeypatch.setattr(records, "meaning_sha256", edited("kernel_bound.py"))  # no toy gate imports it
    discovery = discovery_stage_of(copy)
    assert [r["current"] for r in discovery["records"]] == [True], discovery["notes"]
    monkeypatch.setattr(records, "meaning_sha256", edited("compare.py"))
    discovery = discovery_stage_of(copy)
    assert [r["stale_reasons"] for r in discovery["records"]] == [["the gates changed"]], discovery["notes"]


def test_a_comment_or_docstring_edit_to_the_module_or_its_gates_leaves_the_record_current(discovered, tmp_path):
    import shutil

    root, _, _ = discovered
    commented = tmp_path / "commented"
    shutil.copytree(root, commented)
    module = commented / "mypaper" / "softmax.py"
    text = module.read_text()
    assert text.startswith('"""')  # its docstring, rewritten below
    module.write_text('"""The docstring, rewritten."""\n# a comment\n' + text.split('"""', 2)[2] + "\n# another\n")
    covering = commented / "tests" / "gates" / "test_tempered_softmax.py"
    covering.write_text(covering.read_text() + "\n\n# a comment on the gates\n")
    discovery = discovery_stage_of(commented)
    assert [r["current"] for r in discovery["records"]] == [True], discovery["notes"]


def test_of_pyproject_only_the_tables_a_gate_run_reads_can_stale_a_record(discovered, tmp_path):
    import shutil

    root, _, _ = discovered
    grown = tmp_path / "grown"
    shutil.copytree(root, grown)
    pyproject = grown / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(  # the table's own line, not the comment naming it
        "\n[tool.fidelity]\n", '\n[project]\nname = "mypaper"\ndependencies = ["pytest-xdist"]\n\n[tool.fidelity]\n', 1)
        + 'report_subjects = []\n')
    discovery = discovery_stage_of(grown)
    assert [r["current"] for r in discovery["records"]] == [True], discovery["notes"]
    pyproject.write_text(pyproject.read_text() + '\n[tool.pytest.ini_options]\naddopts = "-p no:randomly"\n')
    discovery = discovery_stage_of(grown)
    assert [r["stale_reasons"] for r in discovery["records"]] == [["the gates changed"]], discovery["notes"]


def test_with_the_gate_index_out_of_date_check_judges_the_records_against_its_own_gate_run(discovered, tmp_path):
    # a new gate file: the cached index is out of date; the gate run collects the suite anyway, and the records are
    # judged against what it collected, not against an index collected first in a process of its own
    import shutil

    root, _, _ = discovered
    grown = tmp_path / "grown"
    shutil.copytree(root, grown)
    (grown / "tests" / "gates" / "test_unrelated.py").write_text(UNRELATED_GATE + COUNTS_ITS_COLLECTIONS)
    report = json.loads(fidelity("check", "--json", cwd=grown).stdout)
    discovery = stage(report, "discovery")
    assert [r["current"] for r in discovery["records"]] == [True], discovery["notes"]  # the new gate covers no record
    assert "tests/gates/test_unrelated.py::test_a_gate_on_another_module" in {g["gate"] for g in report["gates"]}
    assert (grown / "collections.log").read_text().splitlines() == ["collected"], "the suite was collected twice"

