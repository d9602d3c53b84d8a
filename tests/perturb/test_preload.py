"""A zygote imports only the heavy libraries the project's own code names (fidelity/perturb/preload.py)."""
from __future__ import annotations

from pathlib import Path

from fidelity.perturb.preload import preload_for, with_pytest_plugins
from fidelity.perturb.warm_start import PRELOAD, Zygote
from tests.perturb.conftest import make_toy_repo

EVERYTHING = ("torch", "numpy", "pytest", "sympy", "yaml")


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_project_of_the_standard_library_and_its_own_modules_preloads_only_pytest(tmp_path):
    root = _project(tmp_path, {
        "pkg/__init__.py": "", "pkg/core.py": "import math, os.path as p\nfrom . import helpers\n",
        "tests/test_core.py": "import pytest\nfrom pkg import core\nfrom fidelity.gates.readings import record\n",
    })
    assert preload_for(root, EVERYTHING) == ("pytest",)


def test_a_library_named_by_any_file_is_preloaded_and_no_other(tmp_path):
    root = _project(tmp_path, {"pkg/model.py": "import numpy as np\n    from torch import nn\n", "t.py": "import pkg.model\n"})
    assert preload_for(root, EVERYTHING) == ("torch", "numpy", "pytest")


def test_a_third_party_module_the_scan_cannot_see_into_keeps_everything(tmp_path):
    root = _project(tmp_path, {"pkg/model.py": "import numpy\nimport vendor_model_zoo  # may import torch itself\n"})
    assert preload_for(root, EVERYTHING) == EVERYTHING


def test_a_virtual_environment_inside_the_project_is_not_read(tmp_path):
    root = _project(tmp_path, {"pkg/core.py": "import math\n", "env/pyvenv.cfg": "home = /usr\n",
                               "env/lib/site.py": "import vendor_model_zoo\n", ".hidden/x.py": "import vendor_model_zoo\n"})
    assert preload_for(root, EVERYTHING) == ("pytest",)


def test_the_toy_repos_zygote_holds_pytest_and_neither_torch_nor_sympy(tmp_path):
    repo = make_toy_repo(tmp_path / "repo")
    zygote = Zygote(cwd=str(repo), env=None)
    try:
        assert zygote.holds("pytest") and not zygote.holds("torch") and not zygote.holds("sympy")
        assert zygote.holds("xdist.plugin")  # a plugin every child's pytest would import as it starts
    finally:
        zygote.close()
    assert set(preload_for(repo, PRELOAD)) == {"pytest"}


def test_the_pytest_plugins_of_other_packages_come_with_pytest_and_fidelitys_own_never():
    """Each child's pytest imports every pytest11 plugin at start-up; the zygote imports no fidelity module."""
    plugins = with_pytest_plugins(("torch", "pytest"))
    assert plugins[:2] == ("torch", "pytest") and "xdist.plugin" in plugins and "_hypothesis_pytestplugin" in plugins
    assert not [m for m in plugins if m.split(".")[0] == "fidelity"]
    assert with_pytest_plugins(("torch",)) == ("torch",)
