"""The project is found as pytest finds its rootdir: the nearest fidelity.toml, or pyproject.toml
with [tool.fidelity], from the working directory upward; --root names it; paths are relative to it."""
import subprocess
import sys
from pathlib import Path

import pytest

from fidelity import project

REPO = Path(__file__).resolve().parents[2]


def fidelity(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "fidelity", *argv], capture_output=True, text=True, cwd=cwd)


def test_the_nearest_table_wins_and_a_pyproject_without_one_is_passed_over(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.fidelity]\nspecs = "papers"\n')
    inner = tmp_path / "pkg" / "deep"
    inner.mkdir(parents=True)
    (tmp_path / "pkg" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')  # no [tool.fidelity]
    found = project.find(inner)
    assert found.root == tmp_path.resolve()
    assert found.specs == tmp_path.resolve() / "papers"
    assert found.gates == tmp_path.resolve() / "tests" / "gates"  # the default, relative to the root


def test_fidelity_toml_takes_its_keys_at_top_level_and_wins_over_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.fidelity]\nreports = "from-pyproject"\n')
    (tmp_path / "fidelity.toml").write_text('reports = "from-fidelity-toml"\nsubjects = ["a.b:C"]\n')
    found = project.find(tmp_path)
    assert found.config_file.name == "fidelity.toml"
    assert found.reports == tmp_path.resolve() / "from-fidelity-toml"
    assert found.evidence == found.reports / "evidence"
    assert found.subjects == ("a.b:C",)


@pytest.mark.parametrize("text, says", [
    ('[tool.fidelity]\nspec = "x"\n', "unknown key 'spec'"),
    ('[tool.fidelity]\nsubjects = "a.b:C"\n', "subjects must be a list of strings"),
    ('[tool.fidelity]\nspecs = 3\n', "specs must be a path"),
    ('[tool.fidelity]\nreport_subjects = ["pot", 3]\n', "report_subjects must be a list of strings"),
    ('[tool.fidelity\n', "not valid TOML"),
])
def test_a_bad_configuration_names_the_file_and_the_key(tmp_path, text, says):
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(project.ProjectError) as err:
        project.find(tmp_path)
    assert says in str(err.value) and "pyproject.toml" in str(err.value)


def test_report_reads_the_ledgers_third_party_subjects_from_the_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.fidelity]\nreport_subjects = ["no-such-package"]\n')
    (tmp_path / "specs").mkdir()
    assert project.find(tmp_path).report_subjects == ("no-such-package",)
    run = fidelity("report", cwd=tmp_path)  # the name is resolved before anything runs
    assert run.returncode == 2, run.stderr
    assert "report_subjects in pyproject.toml: no subject named 'no-such-package'" in run.stderr
    no_gates = fidelity("report", "--no-gates", "--check", cwd=tmp_path)  # no gate run: no subject is run either
    assert "no subject named" not in no_gates.stderr and "no *.yaml spec files" in no_gates.stderr


def test_check_from_an_unrelated_directory_says_so_in_one_line(tmp_path):
    proc = fidelity("check", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no fidelity project found in" in lines[0] and "fidelity init" in lines[0]


def test_root_names_the_project_from_anywhere(tmp_path):
    proc = fidelity("--root", str(REPO), "list", "papers", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "mhc" in proc.stdout and "attnres" in proc.stdout
    after_verb = fidelity("list", "papers", "--root", str(REPO), cwd=tmp_path)
    assert after_verb.returncode == 0 and after_verb.stdout == proc.stdout


def test_root_that_is_no_project_is_a_usage_error(tmp_path):
    proc = fidelity("--root", str(tmp_path), "check", cwd=REPO)
    assert proc.returncode == 2 and "holds no fidelity.toml" in proc.stderr


def test_this_repository_is_a_project_of_its_own_configuration():
    here = project.find(REPO / "fidelity" / "spec")
    assert here.root == REPO
    assert here.subjects == ("fidelity.subjects.torch_reference:SUBJECT", "fidelity.subjects.triton_kernels:SUBJECT")
    assert here.report_subjects == ("attn-res", "hyper-connections", "hyper-connections-log", "pot")
    assert (here.specs, here.fixtures, here.gates) == (REPO / "specs", REPO / "fixtures", REPO / "tests" / "gates")
