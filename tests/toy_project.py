"""The CLI as a user runs it, and the project `fidelity init` writes, for the tests that need both.

A child fidelity starts (the gate run and its workers, the runner's children) keeps its bytecode under
its project's cache (fidelity/child_env.py). A project made for one test has none yet, so each of its
children compiles torch, numpy, pytest and fidelity afresh: ~20 s of a loaded 2-core machine, more than
most of those tests' own work. The cache holds only what a run recomputes when it is gone, and every pyc
is still checked against its source, so a test's project may keep its bytecode in the one folder the test
run shares (tests/conftest.py's `shared_bytecode`; Python writes each pyc atomically): what the test
checks is unchanged. A project copied with shutil.copytree must keep the link (symlinks=True), else the
copy holds the whole folder.
"""
import os
import subprocess
import sys
from pathlib import Path

from fidelity import cache, project


def fidelity(*argv, cwd) -> subprocess.CompletedProcess:
    """`python -m fidelity ARGV` in `cwd`, as from a shell there (no project pinned by the environment)."""
    env = {k: v for k, v in os.environ.items() if k != project.ROOT_ENV}
    return subprocess.run([sys.executable, "-m", "fidelity", *argv], capture_output=True, text=True, cwd=cwd, env=env)


def init_project(scratch: Path, name: str = "mypaper") -> Path:
    """`fidelity init NAME` in `scratch`; the project's root."""
    made = fidelity("init", name, cwd=scratch)
    assert made.returncode == 0, made.stderr[-2000:]
    return scratch / name


def share_bytecode(root: Path, folder: Path) -> Path:
    """The project at `root`, its children's bytecode kept in `folder` (the run's shared one); returns `root`."""
    bytecode = cache.cache_dir(root) / "bytecode"
    bytecode.parent.mkdir(parents=True, exist_ok=True)
    bytecode.symlink_to(folder, target_is_directory=True)
    return root
