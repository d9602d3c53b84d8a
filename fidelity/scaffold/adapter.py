"""`fidelity init DIR --adapter`: an adapter template a user edits, one Subject per adapter shape.

The template (adapter_template.py.tmpl, shipped in the wheel) holds a function adapter, a forward-only
one, one that lacks an optional input, a module adapter and a stack adapter, each wrapping fidelity's
own reference so that the file loads and passes as written; the user swaps in their package's calls.
"""
from __future__ import annotations

from pathlib import Path

from fidelity.scaffold import ScaffoldError

TEMPLATE = Path(__file__).with_name("adapter_template.py.tmpl")
FILE_NAME = "fidelity_subject.py"
OBJECTS = ("FUNCTION", "FORWARD_ONLY", "LACKS", "MODULE", "STACK")


def write_adapter(directory: Path) -> Path:
    """Write DIR/fidelity_subject.py (DIR created if missing); ScaffoldError, nothing written, if it exists."""
    target = directory / FILE_NAME
    if target.exists():
        raise ScaffoldError(f"{target} exists already, nothing written: move it, or name another DIR")
    directory.mkdir(parents=True, exist_ok=True)
    target.write_text(TEMPLATE.read_text(encoding="utf-8"), encoding="utf-8")
    return target
