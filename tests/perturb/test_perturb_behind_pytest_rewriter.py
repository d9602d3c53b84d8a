"""A perturbation target inside a distribution that registers a pytest plugin (fidelity itself:
its pytest11 entry points) is still served patched: pytest's assertion rewriter, which it puts
first on sys.meta_path and which claims every module of such a distribution, must not load
the target from disk ahead of the patch's finder."""
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent("""
    import sys
    import pytest
    from fidelity.perturb import import_hook
    from fidelity.targets import locate

    target = "fidelity.impl.torch.rmsnorm"
    path = locate.find_source(target, sys.path)
    source = open(path, encoding="utf-8").read() + "\\nSERVED_PATCHED = True\\n"
    import_hook.install(target, path, source)
    sys.exit(pytest.main([sys.argv[1], "-q", "-p", "no:cacheprovider", "-p", "fidelity.perturb.pytest_plugin"]))
""")

TEST = textwrap.dedent("""
    def test_the_target_is_the_patched_source():
        import fidelity.impl.torch.rmsnorm as target
        assert getattr(target, "SERVED_PATCHED", False), "the unpatched file was loaded"
""")


def test_the_patch_is_served_although_pytest_rewrites_fidelitys_modules(tmp_path):
    test_file = tmp_path / "test_served.py"
    test_file.write_text(TEST)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(test_file)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout
