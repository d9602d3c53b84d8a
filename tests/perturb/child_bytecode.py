"""One bytecode folder for the Python children of the projects the tests make.

A child fidelity starts (the gate run and its workers, the runner's children) keeps its bytecode under
its project's cache (fidelity/child_env.py). A project made for one test has none yet, so each of its
children compiles torch, numpy, pytest and fidelity afresh: ~20 s of a loaded 2-core machine, more than
most of those tests' own work. The cache holds only what a run recomputes when it is gone, and every pyc
is still checked against its source, so a test's project may keep its bytecode in one folder the test
run shares (Python writes each pyc atomically, so concurrent children may share it): what the test
checks is unchanged. A project copied with shutil.copytree must keep the link (symlinks=True), else the
copy holds the whole folder.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fidelity import cache

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_bytecode(request, tmp_path_factory) -> Path:
    """The run's one folder (shared by xdist workers) for the bytecode of the test projects' children."""
    # tests/conftest.py's made_once: conftest modules are not importable by name (each is `conftest`)
    made_once = request.config.pluginmanager.get_plugin(str(TESTS / "conftest.py")).made_once
    return made_once(tmp_path_factory, "child-bytecode", lambda folder: None)


def share_bytecode(root: Path, folder: Path) -> Path:
    """The project at `root`, its children's bytecode kept in `folder`; returns `root`."""
    bytecode = cache.cache_dir(root) / "bytecode"
    bytecode.parent.mkdir(parents=True, exist_ok=True)
    bytecode.symlink_to(folder, target_is_directory=True)
    return root
