"""The fidelity project a command works on: found the way pytest finds its rootdir.

A project is the nearest directory, from the starting directory upward, that holds
`fidelity.toml` (its keys at top level) or a `pyproject.toml` with a `[tool.fidelity]`
table (a pyproject.toml without one is passed over). `--root DIR` names it instead.
Every path the harness reads or writes (specs, fixtures, gates, reports, evidence) is
relative to that root and configurable there; none is derived from where the `fidelity`
package is installed, so a non-editable install, another venv or another directory
behave alike.

    [tool.fidelity]
    specs = "specs"                      # spec YAML files
    fixtures = "fixtures"                # oracle fixtures (JSON)
    gates = "tests/gates"                # the gate suite pytest runs
    reports = "reports"                  # ledger and evidence/ (perturbation records)
    subjects = ["my_pkg.subject:SUBJECT"]            # implementations every gate run holds to the gates
    mechanisms = ["my_pkg.mechanisms:MECHANISM"]     # mechanisms beyond fidelity's built-in ones
    fixture_builders = ["my_pkg.oracle"]             # modules registering this project's fixtures
    report_subjects = ["pot"]                        # third-party subjects `fidelity report` adds to the ledger

Child processes (the gate run, perturbation children) learn the project from the
environment variable FIDELITY_ROOT, which `activate()` sets.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT_ENV = "FIDELITY_ROOT"
CONFIG_FILE = "fidelity.toml"
PYPROJECT = "pyproject.toml"

_PATHS = {"specs": "specs", "fixtures": "fixtures", "gates": "tests/gates", "reports": "reports"}
_LISTS = ("subjects", "mechanisms", "fixture_builders", "report_subjects")


class ProjectError(Exception):
    """No project where one was looked for, or a configuration that cannot be used."""


class ProjectNotFound(ProjectError):
    pass


@dataclass(frozen=True)
class Project:
    root: Path
    config_file: Path
    specs: Path
    fixtures: Path
    gates: Path
    reports: Path
    subjects: tuple[str, ...] = ()
    mechanisms: tuple[str, ...] = ()
    fixture_builders: tuple[str, ...] = ()
    report_subjects: tuple[str, ...] = ()  # the ledger's inputs: plain `fidelity report` reproduces it

    @property
    def evidence(self) -> Path:
        from fidelity.evidence.paths import evidence_root  # the one place the folder is named

        return evidence_root(self.reports)

    def relative(self, path: str | os.PathLike) -> str:
        """`path` relative to the root (POSIX separators) when inside it, else absolute."""
        p = Path(os.path.abspath(path))
        try:
            return p.relative_to(self.root).as_posix()
        except ValueError:
            return str(p)

    def activate(self) -> "Project":
        """Make this the project of this process and of every child it starts: the root
        leads the import path (a project's own modules import as they would under pytest),
        and FIDELITY_ROOT names it."""
        os.environ[ROOT_ENV] = str(self.root)
        if str(self.root) not in sys.path:
            sys.path.insert(0, str(self.root))
        _CURRENT.clear()
        _CURRENT.append(self)
        return self


def _table(config_file: Path) -> dict | None:
    """The fidelity settings in `config_file`, or None if it holds none."""
    try:
        data = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProjectError(f"{config_file}: cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProjectError(f"{config_file}: not valid TOML: {exc}") from None
    if config_file.name == PYPROJECT:
        return data.get("tool", {}).get("fidelity")
    return data


def _config_at(directory: Path) -> tuple[Path, dict] | None:
    for name in (CONFIG_FILE, PYPROJECT):
        candidate = directory / name
        if candidate.is_file():
            table = _table(candidate)
            if table is not None:
                return candidate, table
    return None


def _from_table(root: Path, config_file: Path, table: dict) -> Project:
    where = f"{config_file}" + (" [tool.fidelity]" if config_file.name == PYPROJECT else "")
    if not isinstance(table, dict):
        raise ProjectError(f"{where}: must be a table of settings")
    unknown = sorted(set(table) - set(_PATHS) - set(_LISTS))
    if unknown:
        raise ProjectError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join([*_PATHS, *_LISTS])})")
    values: dict = {}
    for key, default in _PATHS.items():
        raw = table.get(key, default)
        if not isinstance(raw, str) or not raw:
            raise ProjectError(f"{where}: {key} must be a path (a non-empty string), got {raw!r}")
        values[key] = (root / raw).resolve()
    for key in _LISTS:
        raw = table.get(key, [])
        if not isinstance(raw, list) or not all(isinstance(r, str) and r for r in raw):
            raise ProjectError(f"{where}: {key} must be a list of strings, got {raw!r}")
        values[key] = tuple(raw)
    return Project(root=root, config_file=config_file, **values)


def load(root: str | os.PathLike) -> Project:
    """The project whose root is exactly `root` (`--root`)."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise ProjectNotFound(f"--root {root}: not a directory")
    found = _config_at(root)
    if found is None:
        raise ProjectNotFound(f"{root} holds no {CONFIG_FILE} and no {PYPROJECT} with a [tool.fidelity] table")
    return _from_table(root, *found)


def find(start: str | os.PathLike | None = None) -> Project:
    """The nearest project at or above `start` (default: the working directory)."""
    start = Path(start or os.getcwd()).resolve()
    for directory in (start, *start.parents):
        found = _config_at(directory)
        if found is not None:
            return _from_table(directory, *found)
    raise ProjectNotFound(f"no fidelity project found in {start} or any parent (looked for {CONFIG_FILE}, or "
                          f"{PYPROJECT} with [tool.fidelity]); run `fidelity init DIR` to start one, or pass --root")


_CURRENT: list[Project] = []


def current() -> Project:
    """This process's project: the one activated, else FIDELITY_ROOT's, else the nearest to the
    working directory. ProjectNotFound when there is none."""
    if not _CURRENT:
        env = os.environ.get(ROOT_ENV)
        project = load(env) if env else find()
        _CURRENT.append(project)
    return _CURRENT[0]


def current_or_none() -> Project | None:
    try:
        return current()
    except ProjectNotFound:
        return None
