"""Issue 32: one capability typo in an adapter file lost every subject declared in it (Capability raised at
import). Now the typo is a one-line error of the subject that has it, and the other subjects of the file run."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ADAPTER = '''
import torch
from fidelity.subjects.subject import Capability, Subject
from fidelity.impl.torch import MhcStack


def _subject(name, dtypes):
    return Subject(name=name, description="the reference stack, declared by hand", unavailable_reason=lambda: None,
                   mechanisms={"mhc_stack": MhcStack},
                   capabilities={"mhc_stack": Capability(dtypes=dtypes, devices=("cpu",), backward=("autograd",))})


GOOD = _subject("good", ("float32", "float64"))
TYPO = _subject("typo", ("float32", "float33"))
'''


def _check(tmp_path, obj):
    (tmp_path / "two_subjects.py").write_text(ADAPTER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "fidelity", "check", "--subject", f"two_subjects:{obj}", "--jobs", "1"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_the_subject_with_the_typo_is_a_one_line_error_naming_it_the_mechanism_and_the_name(tmp_path):
    proc = _check(tmp_path, "TYPO")
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    [line] = proc.stderr.strip().splitlines()
    assert line == ("fidelity check: error: subject 'typo' (two_subjects:TYPO): the capability of 'mhc_stack': "
                    "Capability.dtypes: 'float33' is not a torch dtype name (e.g. 'float32')"), line


def test_another_subject_of_the_same_file_still_runs(tmp_path):
    proc = _check(tmp_path, "GOOD")
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    # passed: mhc.eq3, eq7 (the parameter count per layer), the state item; not run: mhc.eq6, eq8, table5.n and
    # layout.replicated, whose stack gates hold replicated streams, and GOOD declares no stream layout
    assert ("conformance of good: 3 equations passed, 0 with findings, 0 with errors, 0 differing only from our choices "
            "(tier c), 4 not run") in proc.stdout
    assert "declares no stream layout for mhc_stack" in proc.stdout
