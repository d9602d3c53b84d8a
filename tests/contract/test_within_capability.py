"""A subject is asked only for what its Capability declares: other dtypes and devices are not run,
with the declaration as the reason, before the subject is called."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from fidelity import project
from fidelity.gates.output_contract import checked
from fidelity.mechanisms import Capability, NotRun
from fidelity.subjects.subject import Subject

FLOAT32_CPU = Capability(dtypes=("float32",), devices=("cpu",), backward=("autograd",))
calls = []


def _sinkhorn(logits, *, t_max=20, backward="autograd"):
    calls.append(logits.dtype)
    return logits.exp()


class _Module(torch.nn.Module):
    def __init__(self, n, *, dtype=torch.float32):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(n, dtype=dtype))

    def forward(self, x):
        return x * self.w


def _subject():
    return checked(Subject(name="f32-only", description="toy", mechanisms={"sinkhorn": _sinkhorn, "mod": _Module},
                           capabilities={"sinkhorn": FLOAT32_CPU, "mod": FLOAT32_CPU},
                           unavailable_reason=lambda: None))


def test_a_dtype_outside_the_capability_is_not_run_and_the_subject_is_never_called():
    calls.clear()
    fn = _subject().get("sinkhorn")
    fn(torch.zeros(2, 2, dtype=torch.float32))
    with pytest.raises(NotRun, match="declares dtypes float32; asked for float64"):
        fn(torch.zeros(2, 2, dtype=torch.float64))
    assert calls == [torch.float32]


def test_a_factory_asked_for_an_undeclared_dtype_is_not_run():
    factory = _subject().get("mod")
    module = factory(3)
    assert module(torch.ones(3)).dtype == torch.float32
    with pytest.raises(NotRun, match="asked for float64"):
        factory(3, dtype=torch.float64)
    with pytest.raises(NotRun, match="asked for float64"):
        module(torch.ones(3, dtype=torch.float64))


def test_a_device_outside_the_capability_is_not_run_at_collection(tmp_path):
    """Through the plugin, as a user's project gets it: the cuda instance of a cpu-only subject is
    skipped with the declaration, whatever the machine has."""
    (tmp_path / "fidelity.toml").write_text('subjects = ["cpu_subject:SUBJECT"]\n')
    (tmp_path / "cpu_subject.py").write_text(textwrap.dedent("""
        from fidelity.mechanisms import Capability
        from fidelity.subjects.subject import Subject

        SUBJECT = Subject(name="cpu-only", description="toy", mechanisms={"sinkhorn": lambda x, **kw: x.exp()},
                          capabilities={"sinkhorn": Capability(dtypes=("float32",), devices=("cpu",),
                                                               backward=("autograd",))},
                          unavailable_reason=lambda: None)
    """))
    (tmp_path / "tests" / "gates").mkdir(parents=True)
    (tmp_path / "tests" / "gates" / "test_toy.py").write_text(textwrap.dedent("""
        import pytest, torch

        @pytest.mark.gate(equations=["toy.eq1"], mechanism="sinkhorn")
        def test_exp(subject, device):
            x = torch.zeros(2, device=device)
            assert torch.equal(subject.get("sinkhorn")(x), torch.ones(2, device=device))
    """))
    env = {k: v for k, v in os.environ.items() if k != project.ROOT_ENV}  # the toy is found from its directory
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/gates", "-q", "-rs", "-p", "no:cacheprovider"],
                          cwd=tmp_path, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "1 passed, 1 skipped" in proc.stdout
    assert "not run: subject cpu-only declares devices cpu for sinkhorn" in proc.stdout
