"""A project that is a checkout of fidelity itself runs its children on ITS fidelity package (the
project's root comes first on a child's path), whichever fidelity runs the parent. Parent and children
must then be the same code, or the run fails far from the cause (a venv installed from another checkout
ended `perturb P1..P5`, five minutes in, with "forced failure not seen red: expected one result, got 0").
`mismatch` says so in one line before anything runs. An install of this checkout (editable, or a wheel
of the same files, as CI's second check is) is the same code and passes."""
from __future__ import annotations

import os
from pathlib import Path


def mismatch(root: str | os.PathLike) -> str | None:
    """Why the imported fidelity is not the project's own copy of it; None when it is (or the project
    holds no fidelity package)."""
    import fidelity

    own = Path(root).resolve() / "fidelity"
    running = Path(fidelity.__file__).resolve().parent
    if not (own / "__init__.py").is_file() or own == running:
        return None
    differs = _first_difference(own, running)
    if differs is None:
        return None
    return (f"this project is a checkout of fidelity ({own}), but the fidelity running is another copy "
            f"({running}; {differs}): its children would run the checkout's code under another parent. Use "
            f"this checkout's own install (`pip install -e {Path(root).resolve()}` in its venv)")


def _first_difference(a: Path, b: Path) -> str | None:
    files = lambda p: {f.relative_to(p).as_posix() for f in p.rglob("*.py") if "__pycache__" not in f.parts}  # noqa: E731
    ours, theirs = files(a), files(b)
    for name in sorted(ours ^ theirs):
        return f"fidelity/{name} is in {'the checkout' if name in ours else 'the running copy'} only"
    for name in sorted(ours):
        if (a / name).read_bytes() != (b / name).read_bytes():
            return f"fidelity/{name} differs"
    return None
