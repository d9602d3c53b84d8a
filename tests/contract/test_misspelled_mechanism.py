"""Issue 32: a subject whose mechanism name is misspelled ran no gate and `check --subject` exited 0. Now
it is a one-line usage error naming the subject, the unknown name and the declared ones, before any gate runs."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ADAPTER = '''
import torch
from fidelity.subjects.subject import Capability, Subject


def sinkhorn(logits, t_max=20, backward="autograd"):
    raise AssertionError("no gate may run: the name below is misspelled")


SUBJECT = Subject(name="typo", description="a package whose adapter misspells its mechanism",
                  unavailable_reason=lambda: None,
                  mechanisms={"sinkhron": sinkhorn},
                  capabilities={"sinkhron": Capability(dtypes=("float32", "float64"), devices=("cpu",),
                                                       backward=("autograd",))})
'''


def test_a_misspelled_mechanism_is_a_one_line_error_naming_the_subject_and_the_declared_names(tmp_path):
    (tmp_path / "typo_adapter.py").write_text(ADAPTER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "fidelity", "check", "--subject", "typo_adapter:SUBJECT"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("fidelity check: error: subject 'typo' (typo_adapter:SUBJECT) provides mechanism "
                           "'sinkhron', which no declared mechanism names (declared: "), line
    assert "sinkhorn" in line and "running the gate suite" not in proc.stdout
