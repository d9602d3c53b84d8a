"""`fidelity show reference`: where the installed reference for gate authors lies, inside a project or outside one."""
import json
from pathlib import Path

from fidelity import docs_reference
from fidelity.cli import main


def test_show_reference_prints_the_first_page_of_the_installed_reference(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no project here: a user who has just installed fidelity
    assert main(["show", "reference"]) == 0
    out = capsys.readouterr().out
    page = Path(out.splitlines()[0])
    assert page == docs_reference.index_page() and page.is_file()
    assert "browser" in out


def test_show_reference_as_json_names_the_page_and_the_modules(capsys):
    assert main(["show", "reference", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert Path(record["reference"]).is_file() and record["modules"] == list(docs_reference.MODULES)
