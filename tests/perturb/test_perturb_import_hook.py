"""import_hook: the patched source is served in memory; the file on disk is untouched."""
from __future__ import annotations

import importlib
import linecache
import sys
import traceback

import pytest

from fidelity.perturb import import_hook
from fidelity.evidence.jsonio import sha256_file


@pytest.fixture
def demo_module(tmp_path, monkeypatch):
    pkg = tmp_path / "fidelity_hookdemo_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    mod = pkg / "mod.py"
    mod.write_text("def f(x):\n    return x + 1\n\n\ndef boom():\n    raise ValueError('original line')\n")
    (pkg / "other.py").write_text("VALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield mod
    for name in list(sys.modules):
        if name.startswith("fidelity_hookdemo_pkg"):
            del sys.modules[name]


def test_patched_source_is_served_and_file_untouched(demo_module):
    before = sha256_file(demo_module)
    source = demo_module.read_text()
    patched = source.replace("return x + 1", "return x - 1").replace("'original line'", "'patched line'")
    finder = import_hook.install("fidelity_hookdemo_pkg.mod", str(demo_module), patched)
    try:
        mod = importlib.import_module("fidelity_hookdemo_pkg.mod")
        other = importlib.import_module("fidelity_hookdemo_pkg.other")
        assert mod.f(1) == 0  # patched
        assert other.VALUE == 7  # untouched neighbour
        assert mod.__file__ == str(demo_module)
        assert finder.served == 1
        with pytest.raises(ValueError) as e:
            mod.boom()
        frame = traceback.extract_tb(e.value.__traceback__)[-1]
        assert frame.filename == str(demo_module)  # tracebacks point at the real file ...
        assert "patched line" in frame.line  # ... and show the patched source
        assert "patched line" in linecache.getline(str(demo_module), frame.lineno)
    finally:
        import_hook.uninstall(finder)
    assert sha256_file(demo_module) == before
    assert demo_module.read_text() == source
    assert not list(demo_module.parent.glob("__pycache__/mod*.pyc"))  # no bytecode written for the patch


def test_refuses_a_module_already_imported(demo_module):
    importlib.import_module("fidelity_hookdemo_pkg.mod")
    with pytest.raises(RuntimeError, match="imported before"):
        import_hook.install("fidelity_hookdemo_pkg.mod", str(demo_module), "X = 1\n")


def test_refuses_to_patch_a_different_copy(demo_module, tmp_path):
    elsewhere = tmp_path / "copy_of_mod.py"
    elsewhere.write_text(demo_module.read_text())
    finder = import_hook.install("fidelity_hookdemo_pkg.mod", str(elsewhere), "X = 1\n")
    try:
        with pytest.raises(ImportError, match="patch was computed on"):
            importlib.import_module("fidelity_hookdemo_pkg.mod")
    finally:
        import_hook.uninstall(finder)
