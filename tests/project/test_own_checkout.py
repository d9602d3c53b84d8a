"""A checkout of fidelity run by another copy of fidelity (a venv installed from a second checkout) is
one line and exit 2 before anything runs, naming both copies and a file that differs (issue 31: it
ended `perturb P1..P5` after five minutes with "forced failure not seen red: expected one result, got 0").
An install of the same files (CI's wheel of the checkout) runs as before."""
import shutil
from pathlib import Path

import fidelity
from fidelity import project
from fidelity.cli import main

RUNNING = Path(fidelity.__file__).resolve().parent


def _checkout(tmp_path) -> Path:
    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copytree(project.find(__file__).specs, root / "specs")  # this repository's, to load
    (root / "pyproject.toml").write_text('[project]\nname = "fidelity"\n\n[tool.fidelity]\n')
    shutil.copytree(RUNNING, root / "fidelity", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_a_checkout_whose_fidelity_differs_from_the_running_one_is_one_line_and_exit_2(tmp_path, capsys):
    root = _checkout(tmp_path)
    with open(root / "fidelity" / "cli.py", "a") as f:
        f.write("\n# this checkout's own edit\n")
    assert main(["list", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fidelity list: error: this project is a checkout of fidelity")
    assert f"({root / 'fidelity'})" in err and f"({RUNNING}; fidelity/cli.py differs)" in err
    assert f"pip install -e {root}" in err


def test_a_file_only_one_copy_has_is_named(tmp_path, capsys):
    root = _checkout(tmp_path)
    (root / "fidelity" / "newer.py").write_text("")
    assert main(["list", "--root", str(root)]) == 2
    assert "fidelity/newer.py is in the checkout only" in capsys.readouterr().err


def test_a_checkout_with_the_same_files_runs(tmp_path, capsys):
    assert main(["list", "--root", str(_checkout(tmp_path))]) == 0
    assert "error" not in capsys.readouterr().err
