"""The runner stays readable: no function in fidelity/perturb is over 60 lines (issue 16: `run` was
one 373-line function with four nested closures). Counted by `ast`, nested functions included."""
import ast
from pathlib import Path

import fidelity

LIMIT = 60
PERTURB = Path(fidelity.__file__).parent / "perturb"


def test_no_function_in_the_runner_package_is_over_60_lines():
    long = []
    for path in sorted(PERTURB.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LIMIT:
                    long.append(f"{path.relative_to(PERTURB.parent)}:{node.lineno} {node.name}: {lines} lines")
    assert long == []
