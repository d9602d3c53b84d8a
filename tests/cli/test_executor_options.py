"""`--executor` and `--ray-address` as a user meets them: what --help says, and the one-line errors
(exit 2, nothing run) for Ray missing and for an address without the Ray executor."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from toy_project import fidelity, init_project


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return init_project(tmp_path_factory.mktemp("executor"), "execpaper")


@pytest.fixture(scope="module")
def without_ray(tmp_path_factory):
    """An import path on which `import ray` fails, as where Ray was never installed."""
    shadow = tmp_path_factory.mktemp("noray")
    (shadow / "ray").mkdir()
    (shadow / "ray" / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    return shadow


@pytest.mark.parametrize("verb", ["perturb", "discover"])
def test_help_explains_the_executors(project, verb):
    out = fidelity(verb, "--help", cwd=project)
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    assert "--executor {local,ray}" in text and "--ray-address ADDR" in text
    assert "pip install 'fidelity[ray]'" in text


@pytest.mark.parametrize("argv", [["perturb", "P1"], ["discover", "--module", "execpaper.softmax"]])
def test_the_ray_executor_without_ray_is_one_line_and_exit_2(project, without_ray, argv):
    env = {k: v for k, v in os.environ.items() if k != "FIDELITY_ROOT"}
    env["PYTHONPATH"] = os.pathsep.join([str(without_ray), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-m", "fidelity", *argv, "--executor", "ray"], cwd=project, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"fidelity {argv[0]}: error: --executor ray needs Ray, which is not installed here: pip install 'fidelity[ray]'"]
    assert list((project / "reports").rglob("*.json")) == []  # no record written


@pytest.mark.parametrize("argv", [["perturb", "P1"], ["discover", "--module", "execpaper.softmax"]])
def test_an_address_without_the_ray_executor_is_one_line_and_exit_2(project, argv):
    out = fidelity(*argv, "--ray-address", "auto", cwd=project)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"fidelity {argv[0]}: error: --ray-address ADDR is for --executor ray: add --executor ray, or drop --ray-address"]


def test_a_ray_client_address_is_refused_with_what_to_run_instead(project):
    out = fidelity("perturb", "P1", "--executor", "ray", "--ray-address", "ray://head:10001", cwd=project)
    assert out.returncode == 2
    [line] = out.stderr.strip().splitlines()
    assert line.startswith("fidelity perturb: error: ray://head:10001: Ray Client addresses cannot stream")
    assert "ray job submit --working-dir . -- fidelity perturb ... --executor ray --ray-address auto" in line
