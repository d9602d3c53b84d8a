"""A pytest run that never imported hypothesis does not import it to write hypothesis's summary
(fidelity/gates/hypothesis_summary.py); a run that used hypothesis keeps its plugin and summary."""
import subprocess
import sys

import pytest

# what the run's conftest saw at its very end: was hypothesis imported, is its plugin registered
REPORTER = '''
import sys
def pytest_unconfigure(config):
    with open("seen.txt", "w") as f:
        f.write(f"{'hypothesis' in sys.modules} {config.pluginmanager.has_plugin('hypothesispytest')}")
'''
PLAIN = "def test_plain():\n    assert 1 + 1 == 2\n"
WITH_HYPOTHESIS = ("from hypothesis import given, strategies as st\n\n"
                   "@given(st.integers())\ndef test_uses_hypothesis(x):\n    assert x == x\n")


def _run(folder, test_source: str) -> str:
    (folder / "conftest.py").write_text(REPORTER)
    (folder / "test_it.py").write_text(test_source)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
                          cwd=folder, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return (folder / "seen.txt").read_text()


def test_a_run_that_never_used_hypothesis_ends_without_importing_it(tmp_path):
    assert _run(tmp_path, PLAIN) == "False False"


def test_a_run_that_used_hypothesis_keeps_its_plugin_to_the_end(tmp_path):
    assert _run(tmp_path, WITH_HYPOTHESIS) == "True True"
