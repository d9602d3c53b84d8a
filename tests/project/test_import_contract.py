"""The layering is a contract import-linter checks (.importlinter): it holds, it breaks on an import that runs
back up a layer, every package of fidelity is placed in it, and the README's Architecture section shows it."""
import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import fidelity

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / ".importlinter"
PACKAGE = Path(fidelity.__file__).parent


def _lint(config: Path, cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    env = None if pythonpath is None else {**__import__("os").environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
                           str(config), "--no-cache"], cwd=cwd, capture_output=True, text=True, env=env)


def _layers() -> list[list[str]]:
    parser = configparser.ConfigParser(inline_comment_prefixes=(";",))
    parser.read(CONTRACT)
    lines = [line.strip() for line in parser["importlinter:contract:layers"]["layers"].splitlines() if line.strip()]
    return [[name.strip().removeprefix("fidelity.") for name in re.split(r"[:|]", line)] for line in lines]


def test_the_package_keeps_every_contract():
    run = _lint(CONTRACT, ROOT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def test_an_import_that_runs_back_up_a_layer_breaks_the_contract(tmp_path):
    copy = tmp_path / "fidelity"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "reference"))
    store = copy / "evidence" / "store.py"
    store.write_text(store.read_text() + "\n\ndef _upward():\n    from fidelity import cli  # evidence is below cli\n")
    run = _lint(CONTRACT, tmp_path, pythonpath=tmp_path)
    assert run.returncode == 1, run.stdout[-3000:]
    assert "fidelity.evidence.store -> fidelity.cli" in run.stdout, run.stdout[-3000:]


def test_every_package_of_fidelity_is_placed_in_a_layer():
    placed = {name for layer in _layers() for name in layer}
    here = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
            if p.name not in ("__pycache__", "__init__.py") and (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert here - placed == set(), f"place these in a layer of {CONTRACT.name}: {sorted(here - placed)}"


def test_the_readme_architecture_section_is_the_contracts_layers():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Architecture", 1)[1].split("\n#", 1)[0]
    shown = [[n.strip(" `") for n in row.split("|")[2].split(",")] for row in section.splitlines()
             if re.match(r"\| \d+ \|", row)]
    assert shown == _layers(), "README's Architecture table must list .importlinter's layers, top to bottom"
