"""Session-wide set-up shared by every test directory.

Triton kernels run on the CPU in Triton's interpreter, which must be chosen
before any kernel module is imported: without a CUDA device we set
TRITON_INTERPRET=1 here, at the root conftest's configure hook, which runs
before any test module is collected.
"""
import os

import pytest


def pytest_configure(config):
    if _xdist_controller(config):
        return  # it collects and runs nothing: torch's import (~1.5 s) would only delay its workers' start
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


def _xdist_controller(config) -> bool:
    """A pytest-xdist controller that hands every test to its workers (each decides for itself)."""
    return (not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no"
            and not config.option.collectonly)


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


def made_once(tmp_path_factory, name: str, make) -> "os.PathLike":
    """The folder `make(folder)` fills, made once per test run and shared by every xdist worker (the first
    to ask makes it while the others wait on a lock; the rest read it). Treat it as read-only: copy it
    before changing anything in it."""
    import fcntl
    import shutil

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's own folder, above each worker's
    folder = base / f"made-once-{name}"
    with open(base / f"made-once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (base / f"made-once-{name}.done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (base / f"made-once-{name}.done").touch()
    return folder


@pytest.fixture(scope="session")
def regenerated_fixtures(tmp_path_factory):
    """This project's fixtures, regenerated once for the whole run (fixtures.store.regenerate): every
    file is build(id) serialised, so a test about verify's comparing and naming can take its fresh
    builds from here (`fixtures_built_once`) instead of building every fixture again (~10-20 s each)."""
    from fidelity.fixtures import store

    return made_once(tmp_path_factory, "fixtures", store.regenerate)


@pytest.fixture
def fixtures_built_once(regenerated_fixtures, monkeypatch):
    """verify's fresh builds read from `regenerated_fixtures`, not built again. Building itself is held
    by tests/oracles/test_fixture_store.py (a second regeneration byte-identical to this one and to the
    committed files; pooled builds equal to serial ones)."""
    import json

    from fidelity.fixtures import store

    monkeypatch.setattr(store, "_build_all", lambda ids: [
        json.loads((regenerated_fixtures / f"{fid}.json").read_text(encoding="utf-8")) for fid in ids])


class PerturbedInitProject:
    """The project `fidelity init mypaper` writes, after `fidelity perturb --all` and then `fidelity check
    --json` in it, as a user runs them (the CLI in a child process, from the project)."""

    def __init__(self, folder):
        import json

        self.root = folder / "mypaper"
        self.check_returncode = int((folder / "check.returncode").read_text())
        self.check_stdout = (folder / "check.stdout").read_text(encoding="utf-8")
        self.check_report = json.loads(self.check_stdout)

    def copy(self, dest):
        """A copy of the project at `dest` (the project's root), to change or run commands in."""
        import shutil

        shutil.copytree(self.root, dest)
        return dest


def _perturb_all_then_check(folder):
    from toy_project import fidelity, init_project

    root = init_project(folder)
    perturb = fidelity("perturb", "--all", cwd=root)
    assert perturb.returncode == 0, perturb.stdout[-2000:] + perturb.stderr[-2000:]
    check = fidelity("check", "--json", cwd=root)
    (folder / "check.stdout").write_text(check.stdout, encoding="utf-8")
    (folder / "check.returncode").write_text(str(check.returncode))


@pytest.fixture(scope="session")
def perturbed_init_project(tmp_path_factory) -> PerturbedInitProject:
    """One `init`, `perturb --all` (~15-30 s) and `check --json` (~6-10 s) for the whole run, shared by the
    tests that start from that state (scaffold, evidence integrity, discovery in check). Read-only:
    `copy()` it to change anything or to run a command that writes into the project."""
    return PerturbedInitProject(made_once(tmp_path_factory, "perturbed-init-project", _perturb_all_then_check))


class DiscoveredInitProject:
    """`fidelity discover --module mypaper.softmax --json` in a copy of perturbed_init_project's project: its
    exit code, what it printed, and the record it wrote under the copy's reports/discovery."""

    def __init__(self, folder):
        import json

        self.root = folder / "mypaper"
        self.returncode = int((folder / "discover.returncode").read_text())
        self.stdout = (folder / "discover.stdout").read_text(encoding="utf-8")
        self.stderr = (folder / "discover.stderr").read_text(encoding="utf-8")
        self.report = json.loads(self.stdout)
        self.record = self.root / "reports" / "discovery" / "mypaper.softmax.json"


@pytest.fixture(scope="session")
def discovered_init_project(tmp_path_factory, perturbed_init_project) -> DiscoveredInitProject:
    """One discovery of the init project's module for the whole run (~10-25 s), shared by the tests that
    read it (the scaffold's no-blind-spot claim, the Ray executor's local side). Read-only."""
    from toy_project import fidelity

    def discover(folder):
        root = perturbed_init_project.copy(folder / "mypaper")
        found = fidelity("discover", "--module", "mypaper.softmax", "--json", cwd=root)
        for name, text in (("stdout", found.stdout), ("stderr", found.stderr), ("returncode", str(found.returncode))):
            (folder / f"discover.{name}").write_text(text, encoding="utf-8")

    return DiscoveredInitProject(made_once(tmp_path_factory, "discovered-init-project", discover))
