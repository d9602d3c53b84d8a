"""`fidelity init DIR --adapter` gives a wheel user the adapter examples the README points to (issue 51,
point 5): one file, DIR/fidelity_subject.py, with a function, forward-only, lacks, module and stack adapter,
each a Subject that loads, and that passes `fidelity check --subject` as written."""
import json
import os
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
OBJECTS = ("FUNCTION", "FORWARD_ONLY", "LACKS", "MODULE", "STACK")


def fidelity(*argv, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "fidelity", *argv], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=900)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("adapter")
    done = fidelity("init", str(folder), "--adapter", "--json", cwd=folder)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["files"] == ["fidelity_subject.py"] and report["objects"] == list(OBJECTS)
    assert sorted(p.name for p in folder.iterdir()) == ["fidelity_subject.py"]  # the adapter alone, no project
    return folder


@pytest.fixture
def subjects(written, monkeypatch) -> dict:
    from fidelity.mechanisms.registry import declaration_problems, project_mechanisms
    from fidelity import project
    from fidelity.subjects import registry

    monkeypatch.syspath_prepend(str(written))
    loaded = {o: registry.resolve(f"fidelity_subject:{o}")[1] for o in OBJECTS}
    mechanisms = project_mechanisms(project.current())
    assert {o: declaration_problems(s, mechanisms) for o, s in loaded.items()} == {o: [] for o in OBJECTS}
    return loaded


def test_a_second_write_refuses_and_leaves_the_file(written):
    before = (written / "fidelity_subject.py").read_text()
    again = fidelity("init", str(written), "--adapter", cwd=written)
    assert again.returncode == 2 and "exists already, nothing written" in again.stderr
    assert (written / "fidelity_subject.py").read_text() == before


def test_the_module_and_stack_adapters_build_and_run_and_lacks_refuses_the_gain(subjects):
    module = subjects["MODULE"].mechanisms["mhc_residual"](4, 8, dtype=torch.float64)
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    assert module(x, lambda u: u).shape == x.shape
    stack = subjects["STACK"].mechanisms["mhc_stack"](8, [torch.nn.Linear(8, 8)])
    assert stack(torch.randn(3, 8)).shape == (3, 8)
    from fidelity.subjects.subject import NotRun

    attend = subjects["LACKS"].mechanisms["depth_attention"]
    with pytest.raises(NotRun, match="no learned gain"):
        attend(torch.randn(3, 8), torch.zeros(8), gain=torch.ones(8))
    with pytest.raises(NotRun, match="only the paper's replicated layout"):
        subjects["MODULE"].mechanisms["mhc_residual"](4, 8, layout="sliced")


def _check(written: Path, objects: tuple[str, ...]) -> dict[str, dict]:
    """object -> its conformance, from one `check --subject A --subject B` (each judged on its own instances, as
    alone; one interpreter and collection instead of one per object)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(written), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    subjects = [word for obj in objects for word in ("--subject", f"fidelity_subject:{obj}")]
    done = fidelity("check", *subjects, "--json", "--jobs", "1", cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    each = [entry["conformance"] for entry in json.loads(done.stdout)["subjects"]]
    assert [c["reference"] for c in each] == [f"fidelity_subject:{obj}" for obj in objects]
    return dict(zip(objects, each, strict=True))


def test_the_function_and_forward_only_adapters_pass_every_sinkhorn_gate(written):
    runs = _check(written, ("FUNCTION", "FORWARD_ONLY"))
    for obj, conformance in runs.items():
        verdicts = {e["equation"]: e["verdict"] for e in conformance["equations"]}
        assert "mhc.eq9" in verdicts and set(verdicts.values()) == {"passed"}, (obj, verdicts)


def test_the_template_is_package_data_of_the_wheel():
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["fidelity.scaffold"]
    assert any(fnmatch("adapter_template.py.tmpl", pattern) for pattern in data), data
