"""`fidelity init`'s scaffold: a working project for one equation of one paper.

The files under template/ are written with three names filled in: `__package__` (the
Python package of the user's implementation), `__paper__` (the paper id of the spec) and
`__today__` (the date the spec says it was read). Each file ends in `.tmpl` here so that
no tool mistakes the template for this package's own code or tests.
"""
from __future__ import annotations

import datetime as _dt
import keyword
import re
from pathlib import Path

TEMPLATE = Path(__file__).with_name("template")
SUFFIX = ".tmpl"


class ScaffoldError(Exception):
    """The scaffold cannot be written as asked: nothing has been written."""


def package_name(directory: Path) -> str:
    """A Python package name (and paper id) from a directory name: 'My-Paper 2' -> 'my_paper_2'."""
    name = re.sub(r"[^a-z0-9]+", "_", directory.resolve().name.lower()).strip("_")
    if not name or not name[0].isalpha():
        name = "paper_" + name
    return name


def check_name(name: str) -> None:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name):
        raise ScaffoldError(f"{name!r} cannot name the package and the paper: use lower-case letters, digits and _, "
                            f"starting with a letter (--name NAME)")
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is not None and spec.origin not in (None, "namespace"):  # a bare directory is no module
        raise ScaffoldError(f"{name!r} is already an importable module here (it would shadow it or be shadowed); "
                            f"choose another with --name NAME")


def plan(directory: Path, name: str) -> dict[Path, str]:
    """Destination path -> text, for every file of the scaffold."""
    fills = {"__package__": name, "__paper__": name, "__today__": _dt.date.today().isoformat()}

    def fill(text: str) -> str:
        for key, value in fills.items():
            text = text.replace(key, value)
        return text

    out: dict[Path, str] = {}
    for source in sorted(TEMPLATE.rglob("*" + SUFFIX)):
        relative = fill(source.relative_to(TEMPLATE).as_posix())[: -len(SUFFIX)]
        out[directory / relative] = fill(source.read_text(encoding="utf-8"))
    return out


def write(directory: Path, name: str) -> list[Path]:
    """Write the scaffold into `directory` (created if missing); ScaffoldError, with nothing
    written, if any of its files exists already."""
    files = plan(directory, name)
    clashes = sorted(str(p) for p in files if p.exists())
    if clashes:
        raise ScaffoldError(f"{len(clashes)} file(s) exist already, nothing written: {', '.join(clashes)}")
    check_name(name)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return sorted(files)
