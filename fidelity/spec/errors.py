"""The one error a spec problem may raise: it names the file, the line and the key path."""
from __future__ import annotations

from pathlib import Path


def format_path(path: tuple) -> str:
    """('equations', 3, 'tier') -> 'equations[3].tier'."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<document>"


class SpecError(Exception):
    def __init__(self, file: str | Path, line: int | None, path: tuple, message: str):
        self.file = str(file)
        self.line = line
        self.path = tuple(path)
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        file = _display(self.file)
        where = f"{file}:{self.line}" if self.line else file
        return f"{where}: {format_path(self.path)}: {self.message}"

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "path": format_path(self.path), "message": self.message}


def _display(file: str) -> str:
    """A path relative to the working directory when it lies below it, else as given."""
    try:
        return str(Path(file).resolve().relative_to(Path.cwd()))
    except ValueError:
        return file
