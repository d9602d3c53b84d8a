"""Session-wide set-up shared by every test directory.

Triton kernels run on the CPU in Triton's interpreter, which must be chosen
before any kernel module is imported: without a CUDA device we set
TRITON_INTERPRET=1 here, at the root conftest, which pytest loads first.
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


import pytest


@pytest.fixture(autouse=True)
def _project_state_restored():
    """A test that runs the CLI in-process activates a project (FIDELITY_ROOT, sys.path, the
    cached current project): put all three back, so the next test sees this repository again."""
    import sys

    from fidelity import project

    env, path, current = os.environ.get(project.ROOT_ENV), list(sys.path), list(project._CURRENT)
    yield
    if env is None:
        os.environ.pop(project.ROOT_ENV, None)
    else:
        os.environ[project.ROOT_ENV] = env
    sys.path[:] = path
    project._CURRENT[:] = current
