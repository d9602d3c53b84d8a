"""Text a child's record shows the same whichever process, machine or venv wrote it: memory addresses
blanked, file paths relative to where they were installed or to the project."""
from __future__ import annotations

import os
import re

_ADDRESS = re.compile(r"(?<= at )0x[0-9a-fA-F]+")


def without_addresses(message: str) -> str:
    """`message` with the memory addresses of object reprs ("<built-in method equal of type object at
    0x7f3e...>", as pytest's assertion rewriting prints them) as "0x..": they change in every process,
    and a record must read the same whichever run or machine wrote it."""
    return _ADDRESS.sub("0x..", message)


def shown_path(path: str, rootdir: str | None, installed: list[str] | None = None) -> str:
    """`path` as a record names it (POSIX separators): an installed file relative to the deepest installation
    folder holding it (site-packages, the standard library: "torch/nn/functional.py"), even where a venv lies
    inside the project; else relative to `rootdir` when inside it; else as it is. Where packages are installed
    differs between machines and venvs, and a record must read the same whichever of them wrote it."""
    folders = [os.path.join(os.path.abspath(f), "") for f in (installation_folders() if installed is None
                                                             else installed)]
    holding = max((f for f in folders if path.startswith(f)), key=len, default=None)
    if holding is None and rootdir and path.startswith(rootdir):
        holding = rootdir
    return path if holding is None else path[len(holding):].replace(os.sep, "/")


def installation_folders() -> list[str]:
    """Where this interpreter installs packages and keeps its standard library (a venv's site-packages
    among them, wherever the venv lies)."""
    import sysconfig

    paths = sysconfig.get_paths()
    return [paths[k] for k in ("purelib", "platlib", "stdlib", "platstdlib") if k in paths]


def installation_prefixes() -> tuple[str, ...]:
    """Each installation folder resolved and ending in a separator: a resolved path that starts with one of
    them is an installed file (`path.startswith(installation_prefixes())`)."""
    return tuple(os.path.join(os.path.realpath(f), "") for f in installation_folders())
