"""A loop_model factory may be a class or a function, as packages ship them: the gates read the config
dataclass from the annotation of its `config` parameter (fidelity.mechanisms.loop_model.config_class).
A factory with no such annotation was a KeyError 'config' in every loop gate instance (343 of them); now
loading the subject refuses it in one line that says what to annotate, before any gate runs."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fidelity.impl.torch.loop_model import LoopConfig, LoopModel
from fidelity.mechanisms.loop_model import config_class
from fidelity.subjects.registry import EXTRA_ENV, ONLY_ENV

REPO = Path(__file__).resolve().parents[2]
ADAPTER = '''
import torch
from fidelity.impl.torch.loop_model import LoopConfig, LoopModel
from fidelity.subjects.subject import Capability, Subject

CAPABILITY = Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",))


def build_loop(config: LoopConfig, generator: torch.Generator, *, dtype=torch.float32, device=None):
    return LoopModel(config, generator, dtype=dtype, device=device)


def build_loop_unannotated(config, generator, *, dtype=torch.float32, device=None):
    raise AssertionError("no gate may run: the factory above has no config annotation")


def _subject(name, factory):
    return Subject(name=name, description="the reference loop model behind a function factory",
                   unavailable_reason=lambda: None, mechanisms={"loop_model": factory},
                   capabilities={"loop_model": CAPABILITY}, modules={"loop_model": ("fidelity.impl.torch",)})


FUNCTION = _subject("loop-function", build_loop)
UNANNOTATED = _subject("loop-unannotated", build_loop_unannotated)
'''


def _adapter(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "loop_adapter.py").write_text(ADAPTER)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}


def _make(config: LoopConfig, generator: torch.Generator, *, dtype=torch.float32, device=None):
    return LoopModel(config, generator, dtype=dtype, device=device)


class _Maker:
    def __call__(self, config: LoopConfig, generator, *, dtype=torch.float32, device=None):
        return LoopModel(config, generator, dtype=dtype, device=device)


def _unannotated(config, generator, *, dtype=torch.float32, device=None):
    return LoopModel(config, generator, dtype=dtype, device=device)


def _unresolvable(config: "NoSuchConfig", generator):  # noqa: F821
    return None


@pytest.mark.parametrize("factory", [LoopModel, _make, _Maker()], ids=["class", "function", "callable object"])
def test_the_config_class_is_read_from_a_class_a_function_or_a_callable_object(factory):
    assert config_class(factory) is LoopConfig


@pytest.mark.parametrize("factory, says", [(_unannotated, "annotate its `config` parameter with the config dataclass"),
                                           (_unresolvable, "its annotations do not resolve (NameError")],
                         ids=["no annotation", "unresolvable annotation"])
def test_a_factory_without_a_usable_config_annotation_is_a_type_error_saying_what_to_annotate(factory, says):
    with pytest.raises(TypeError, match=r"^loop_model factory ") as caught:
        config_class(factory)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_check_subject_refuses_an_unannotated_factory_in_one_line_before_any_gate_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fidelity", "check", "--subject", "loop_adapter:UNANNOTATED"],
                          cwd=REPO, env=_adapter(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("fidelity check: error: subject 'loop-unannotated' (loop_adapter:UNANNOTATED) "
                           "mechanism 'loop_model': loop_model factory build_loop_unannotated: annotate its "
                           "`config` parameter"), line
    assert "running the gate suite" not in proc.stdout


def test_the_loop_gates_build_a_function_factorys_model_from_its_annotation(tmp_path):
    """Two loop gate files on the function factory alone, as `check --subject` runs them: every instance passes."""
    env = {**_adapter(tmp_path), EXTRA_ENV: "loop_adapter:FUNCTION", ONLY_ENV: "loop-function"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                           "tests/gates/test_loop_config_frozen.py", "tests/gates/test_loop_module_config.py"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    ran = [line for line in proc.stdout.splitlines() if "[loop-function-cpu-" in line and line.rstrip().endswith("%]")]
    assert len(ran) >= 10 and all(" PASSED " in line for line in ran), proc.stdout[-3000:]  # cuda: not on this machine
