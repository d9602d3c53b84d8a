"""The CLI as a user meets it: exit codes, --help, JSON shapes, clear errors."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fidelity.cli import main

REPO = Path(__file__).resolve().parents[2]


# The fixtures --verify tests take verify's fresh builds from one regeneration shared by the run (conftest's
# fixtures_built_once): they are about the verb's exit code and what it names; building is held by
# tests/oracles/test_fixture_store.py.


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("verb", ["init", "list", "show", "check", "fixtures", "perturb", "discover", "report"])
def test_every_verb_has_help(verb):
    proc = subprocess.run([sys.executable, "-m", "fidelity", verb, "--help"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and "usage: fidelity " + verb in proc.stdout
    assert "--specs" in proc.stdout or verb in ("fixtures", "init", "discover")
    assert ("--root" in proc.stdout) == (verb != "init")  # init writes a project: there is no root to name


def test_list_equations_json_shape(capsys):
    code, out, _ = run_cli(capsys, "list", "equations", "--json")
    rows = json.loads(out)
    assert code == 0 and rows
    assert {"id", "paper", "where", "tier", "status"} <= set(rows[0])
    assert {r["paper"] for r in rows} == {"attnres", "mhc", "hc", "rmsnorm"}
    assert all(r["tier"] in "abc" for r in rows)


def test_list_claims_has_a_verdict_per_claim(capsys):
    code, out, _ = run_cli(capsys, "list", "claims", "--json")
    rows = json.loads(out)
    assert code == 0
    assert {r["verdict"] for r in rows} <= {"confirmed", "refuted", "unchecked"}
    score = next(r for r in rows if r["id"] == "attnres.claim.paper_score0")
    assert score["verdict"] == "refuted" and score["stated"] == "4.000002" and score["computed"].startswith("3.99992")


def test_show_an_equation_with_provenance(capsys):
    code, out, _ = run_cli(capsys, "show", "mhc.eq9", "--json")
    item = json.loads(out)
    assert code == 0 and item["item"] == "equation" and item["tier"] in "abc"
    assert item["provenance_paper"]["arxiv"] == "2512.24880v2"
    assert item["defined_at"].split(":")[0].endswith("specs/mhc.yaml") and int(item["defined_at"].split(":")[1]) > 0


def test_show_unknown_id_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["show", "mhc.eq99"])
    assert info.value.code == 2
    assert "no item with id 'mhc.eq99'" in capsys.readouterr().err


def test_bad_spec_dir_is_exit_2_without_traceback(tmp_path, capsys):
    (tmp_path / "broken.yaml").write_text("schema_version: 1\npaper: [\n")
    code, out, err = run_cli(capsys, "list", "--specs", str(tmp_path))
    assert code == 2 and "broken.yaml:" in err and "malformed YAML" in err and "Traceback" not in err


def test_check_json_on_a_broken_spec(tmp_path, capsys):
    (tmp_path / "broken.yaml").write_text("schema_version: 2\n")
    code, out, _ = run_cli(capsys, "check", "--json", "--specs", str(tmp_path))
    report = json.loads(out)
    assert code == 2 and report["ok"] is False and report["stages"][0]["stage"] == "specs"


def test_check_json_file_keeps_the_report_while_the_text_goes_to_the_terminal(tmp_path, capsys):
    (tmp_path / "broken.yaml").write_text("schema_version: 2\n")
    out_file = tmp_path / "check.json"
    code, out, err = run_cli(capsys, "check", "--specs", str(tmp_path), "--json-file", str(out_file))
    report = json.loads(out_file.read_text())
    assert code == 2 and "specs     RED" in err and not out.startswith("{")
    assert report["ok"] is False and report["stages"][0]["stage"] == "specs"
    assert report["stages"][0]["error"]["file"].endswith("broken.yaml")


def test_fixtures_verify_is_green(capsys, fixtures_built_once):
    code, out, _ = run_cli(capsys, "fixtures", "--verify", "--json")
    assert code == 0 and json.loads(out)["ok"] is True


def test_fixtures_verify_names_a_changed_digit(tmp_path, capsys, fixtures_built_once):
    src = REPO / "fixtures"
    for f in src.glob("*.json"):
        (tmp_path / f.name).write_text(f.read_text())
    target = tmp_path / "mhc.eq3_sliced.json"
    text = target.read_text()
    target.write_text(text.replace("8.950813375962908707", "8.950813375962908708", 1))
    code, out, _ = run_cli(capsys, "fixtures", "--verify", "--dir", str(tmp_path))
    assert code == 1 and "mhc.eq3_sliced" in out and "out" in out


def test_fixtures_verify_invalid_json_is_exit_2(tmp_path, capsys, fixtures_built_once):
    src = REPO / "fixtures"
    for f in src.glob("*.json"):
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "mhc.eq3_sliced.json").write_text("{ not json")
    code, _, err = run_cli(capsys, "fixtures", "--verify", "--dir", str(tmp_path))
    assert code == 2 and "mhc.eq3_sliced.json" in err


def test_perturb_unknown_id_lists_the_known_ones(capsys):
    code, _, err = run_cli(capsys, "perturb", "P999")
    assert code == 2 and "unknown perturbation id(s): P999" in err and "Known: P1" in err


def test_report_unknown_subject_lists_the_known_ones(tmp_path, capsys):
    code, out, err = run_cli(capsys, "report", "--subject", "pot", "--subject", "no-such-package",
                             "--out", str(tmp_path / "out"))
    assert code == 2 and "no subject named 'no-such-package'" in err
    assert "pot" in err and "hyper-connections" in err and "attn-res" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()                                  # nothing ran, nothing written


def _user_catalogue(tmp_path, find):
    f = tmp_path / "mine.yaml"
    f.write_text(
        "perturbations:\n"
        "  - id: my-defect\n"
        "    title: my defect\n"
        "    target: fidelity.impl.torch.sinkhorn\n"
        "    edits:\n"
        f"      - {{find: {json.dumps(find)}, replace: 'x'}}\n"
        "    gates: [tests/gates/test_sinkhorn_fixtures.py::test_two_by_two_matches_eq9_after_t_max_steps]\n")
    return f


def test_perturb_file_with_a_pattern_matching_nothing(tmp_path, capsys):
    from fidelity.perturb import launch

    code, _, err = run_cli(capsys, "perturb", "--file", str(_user_catalogue(tmp_path, "no such text anywhere")))
    assert code == 2 and "my-defect" in err and "sinkhorn.py" in err and "no such text anywhere" in err
    assert "mine.yaml:2: perturbation my-defect" in err  # where the perturbation is written, to fix it there
    # the error stopped the run's other groups, and only that run: later runs in this process may start children
    assert not launch._stopped.is_set()


def test_perturb_ends_with_one_verdict_line(tmp_path, perturbed_init_project):
    from toy_project import fidelity

    # the init project's P1: a run of seconds, not our suite's; in a copy of the run's perturbed one, whose
    # kept clean runs spare this run its ten
    root = perturbed_init_project.copy(tmp_path / "mypaper")
    run = fidelity("perturb", "P1", cwd=root)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.rstrip().splitlines()[-1] == ("perturb: GREEN  1 perturbations: 1 caught by every listed "
                                                    "gate, 0 current (evidence kept, not re-run), 0 survived, "
                                                    "0 missed a listed gate, 0 not run")


def test_list_an_unknown_paper_is_exit_2_naming_the_papers(capsys):
    code, out, err = run_cli(capsys, "list", "claims", "--paper", "nope", "--json")
    assert code == 2 and json.loads(out) == {"ok": False, "error": {
        "kind": "usage", "message": "no paper 'nope' in the specs; the papers are: attnres, hc, mhc, rmsnorm"}}
    assert "no paper 'nope'" in err


def test_list_json_on_a_spec_error_answers_on_stdout(tmp_path, capsys):
    (tmp_path / "broken.yaml").write_text("schema_version: 1\npaper: [\n")
    code, out, _ = run_cli(capsys, "list", "--specs", str(tmp_path), "--json")
    error = json.loads(out)["error"]
    assert code == 2 and error["kind"] == "spec" and error["file"].endswith("broken.yaml") and error["line"] == 2


def test_perturb_file_with_a_pattern_matching_several_places(tmp_path, capsys):
    code, _, err = run_cli(capsys, "perturb", "--file", str(_user_catalogue(tmp_path, "import")))
    assert code == 2 and "my-defect" in err and "'import'" in err


def test_perturb_malformed_file_is_the_loaders_error(tmp_path, capsys):
    f = tmp_path / "mine.yaml"
    f.write_text("perturbations:\n  - id: P1\n    title: t\n    target: x\n    edits: []\n    gates: []\n")
    code, _, err = run_cli(capsys, "perturb", "--file", str(f))
    assert code == 2 and "mine.yaml:" in err and "perturbations[0]" in err


def test_check_subject_whose_gate_run_breaks_is_red_with_the_reason(capsys, monkeypatch):
    """A gate run that does not complete (pytest exit 3: an internal error) is no finding about the
    package and no traceback: exit 1, saying what broke."""
    from fidelity.gaterun import gates_stage

    monkeypatch.setattr(gates_stage, "run_gate_suite",
                        lambda *a, **k: {"items": [], "returncode": 3, "output_tail": "INTERNALERROR> boom"})
    code, _, err = run_cli(capsys, "check", "--subject", "pot")
    assert code == 1 and "did not complete" in err and "INTERNALERROR> boom" in err and "Traceback" not in err


def test_check_subject_with_the_gate_files_narrowed_to_a_file_of_none_is_one_line_and_exit_2(capsys, monkeypatch):
    from fidelity.gaterun.subject_gate_files import ONLY_ENV

    monkeypatch.setenv(ONLY_ENV, "test_no_such_gate_file.py")
    code, _, err = run_cli(capsys, "check", "--subject", "pot")
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"fidelity check: error: {ONLY_ENV} names ")
    assert "test_no_such_gate_file.py, which is not a gate file under" in err


@pytest.mark.parametrize("ref, says", [
    ("os.path:join", "'os.path:join': calling join() to get a Subject raised TypeError"),      # a callable that raises
    ("os:getcwd", "'os:getcwd' is a str, not a fidelity.subjects.subject.Subject"),            # returns something else
    ("nope:X", "'nope:X': module 'nope' does not import: ModuleNotFoundError"),
    ("fidelity.subjects.registry:Missing", "module 'fidelity.subjects.registry' has no attribute 'Missing'"),
    ("no-such-package", "no subject named 'no-such-package'; known: torch"),
    # the line of the module that raised, so a Subject built without an argument points at itself
    ("broken_on_import_for_fidelity:SUBJECT",
     "does not import: line 2 of broken_on_import_for_fidelity.py raised RuntimeError: boom at import"),
])
def test_check_bad_subject_reference_is_one_line_and_exit_2(ref, says, capsys, tmp_path, monkeypatch):
    (tmp_path / "broken_on_import_for_fidelity.py").write_text("import os\nraise RuntimeError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run_cli(capsys, "check", "--subject", ref)
    assert code == 2 and says in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("fidelity check: error: ")
