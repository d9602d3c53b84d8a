"""The files `fidelity init` writes point to the reference for gate authors wherever they use a helper it documents.

A new user's first gate and oracle are these files; the pointer is the command that finds the installed pages
(`fidelity show reference`), which works from any install, not a path in fidelity's own checkout.
"""
import ast

from fidelity import docs_reference
from fidelity.scaffold import plan


NOT_YET: set[str] = set()
"""Files of the scaffold that use a documented helper and do not point to the reference yet (none)."""


def _documented_imports(source: str) -> set[str]:
    modules = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom) and node.module}
    return modules & set(docs_reference.MODULES)


def test_every_scaffolded_file_that_uses_a_documented_helper_says_where_the_reference_is(tmp_path):
    files = {path: text for path, text in plan(tmp_path / "mypaper", "mypaper").items() if path.suffix == ".py"}
    users = {path.name: _documented_imports(text) for path, text in files.items() if _documented_imports(text)}
    assert {"oracle.py", "test_tempered_softmax.py"} <= users.keys()  # the files a gate author starts from
    silent = sorted(path.name for path, text in files.items() if path.name in users.keys() - NOT_YET
                    and "fidelity show reference" not in text)
    assert not silent, f"{silent} use helpers of the reference ({[sorted(users[n]) for n in silent]}) without pointing to it"
