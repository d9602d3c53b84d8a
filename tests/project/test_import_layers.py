"""Arrows run one way: a package of fidelity imports only from packages in its own layer or below
(README, Design: data flow). Read from the source by `ast`, function-level imports included, so a
lazy import that runs back up is caught too."""
import ast
from pathlib import Path

import fidelity

# bottom first
LAYERS = [
    {"textable", "message_line", "references", "writer_lock", "targets", "cache", "child_env"},
    {"evidence"},
    {"project", "own_checkout"},
    {"spec"},
    {"mechanisms"},
    {"impl"},
    {"subjects", "oracles"},
    {"adapters", "claims", "fixtures", "gates"},
    {"perturb"},
    {"discover"},
    {"check"},
    {"report"},
    {"commands", "scaffold", "bench", "docs_reference"},
    {"cli"},
    {"__main__", "__init__"},
]
PACKAGE = Path(fidelity.__file__).parent


def _level(part: str) -> int:
    for i, layer in enumerate(LAYERS):
        if part in layer:
            return i
    raise AssertionError(f"fidelity.{part} is in no layer of {__file__}: place it")


def _is_module(name: str) -> bool:
    return (PACKAGE / f"{name}.py").exists() or (PACKAGE / name / "__init__.py").exists()


def _arrows():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        if "template" in rel.parts:
            continue
        src = rel.parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"fidelity.{a.name}" for a in node.names if _is_module(a.name)] if node.module == "fidelity" \
                    else [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "fidelity" and len(parts) > 1 and parts[1] != src:
                    yield rel.as_posix(), node.lineno, src, parts[1]


def test_every_package_is_placed_in_a_layer():
    for path in PACKAGE.iterdir():
        if path.name != "__pycache__" and (path.suffix == ".py" or (path / "__init__.py").exists()):
            _level(path.stem if path.suffix == ".py" else path.name)


def test_no_import_runs_back_up_a_layer():
    upward = [f"fidelity/{file}.py:{line}: {src} imports fidelity.{dst}"
              for file, line, src, dst in _arrows() if _level(dst) > _level(src)]
    assert upward == []
