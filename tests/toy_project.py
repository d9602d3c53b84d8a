"""The CLI as a user runs it, and the project `fidelity init` writes, for the tests that need both."""
import os
import subprocess
from pathlib import Path

import warm_cli
from fidelity import project


def fidelity(*argv, cwd, python_options: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`python [PYTHON_OPTIONS] -m fidelity ARGV` in `cwd`, as from a shell there (no project pinned by the
    environment)."""
    env = {k: v for k, v in os.environ.items() if k != project.ROOT_ENV}
    return warm_cli.fidelity(argv, cwd=cwd, env=env, python_options=python_options)


def init_project(scratch: Path, name: str = "mypaper") -> Path:
    """`fidelity init NAME` in `scratch`; the project's root."""
    made = fidelity("init", name, cwd=scratch)
    assert made.returncode == 0, made.stderr[-2000:]
    return scratch / name


# Added to a gate file: each process that collects the file imports it once (a fork of the gate run after its
# collection does not), writing a line to collections.log at the project's root: how often a command collected it.
COUNTS_ITS_COLLECTIONS = '''
import os
with open(os.path.join(os.path.dirname(__file__), "..", "..", "collections.log"), "a") as _log:
    _log.write("collected\\n")
'''
