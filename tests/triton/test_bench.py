"""The benchmark scripts and the GPU check, on a CPU: their plans, their CUDA report layout, a tiny run.

The GPU check cannot run here; what can be checked without a GPU is: which commands it would
run (and that they exist), the environment its children get (TRITON_INTERPRET removed,
subjects torch and triton), its refusal without CUDA, and the CUDA table of the benchmarks
rendered from made-up rows.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fidelity.bench import _harness, gpu_check

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_plans_four_steps_within_eight_minutes(tmp_path):
    plan = gpu_check.commands(tmp_path)
    assert [name for name, *_ in plan] == ["gates", "triton_tests", "sinkhorn_bench", "depth_attention_bench"]
    assert sum(limit for _, _, limit, _ in plan) + 15 <= 8 * 60
    for name, cmd, _, log in plan:
        assert cmd[0] == sys.executable and log.parent == tmp_path
        assert (ROOT / cmd[3]).exists() if cmd[1:3] == ["-m", "pytest"] else True
    gates = plan[0][1]
    assert gates[gates.index("-k") + 1] == "cuda" and f"--junitxml={tmp_path}/gates.xml" in gates


def test_gpu_check_children_run_compiled_kernels_for_torch_and_triton(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("FIDELITY_SUBJECTS", "x.y:Z")
    env = gpu_check.child_env()
    assert "TRITON_INTERPRET" not in env
    assert env["FIDELITY_SUBJECTS"].split(",") == ["x.y:Z", gpu_check.SUBJECTS_REF]
    assert env["FIDELITY_ONLY_SUBJECTS"] == "torch,triton"


def test_gpu_check_modules_exist():
    for _, cmd, _, _ in gpu_check.commands(Path("/tmp")):
        if cmd[1] == "-m" and cmd[2].startswith("fidelity."):
            __import__(cmd[2])


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_gpu_check_refuses_without_cuda(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fidelity.bench.gpu_check", str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["reason"] == "no CUDA device"
    assert json.loads((tmp_path / "out" / "env.json").read_text())["cuda_available"] is False


def test_cuda_table_reports_kernels_bandwidth_and_peak():
    row = _harness.Row(config={"tokens": 1 << 20, "n": 4}, bytes_fwd=2 * 64 << 20, bytes_fwd_bwd=4 * 64 << 20,
                       fused_ms={"fwd": 0.05, "fwd+bwd": 0.2}, torch_ms={"fwd": 2.0, "fwd+bwd": 8.0},
                       fused_launches={"fwd": {"cuda_kernels": 1}, "fwd+bwd": {"cuda_kernels": 2}},
                       torch_launches={"fwd": {"cuda_kernels": 240}, "fwd+bwd": {"cuda_kernels": 900}})
    text = _harness.render("t", [row], "cuda", 4.8, False, name="NVIDIA H200")
    assert "NVIDIA H200, peak bandwidth 4.8 TB/s" in text
    assert "ratio      40x" in text and "launches fused 1 / torch 240" in text
    bw = (2 * 64 << 20) / 0.05e-3 / 1e12
    assert f"eff {bw:.2f} TB/s = {100 * bw / 4.8:.0f}% of peak" in text
    assert _harness.device_peak_tbs("cpu") is None and _harness.device_peak_tbs("cuda", 3.0) == 3.0


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton not installed")
@pytest.mark.parametrize("module,args", [
    ("fidelity.bench.sinkhorn_bench", ["--tokens", "16", "--n", "3"]),
    ("fidelity.bench.depth_attention_bench", ["--tokens", "8", "--sources", "3", "--d", "16"]),
])
def test_benchmarks_run_a_tiny_configuration_and_write_json(tmp_path, module, args):
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", module, "--quick", "--out", str(tmp_path), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(next(tmp_path.glob("*_bench.json")).read_text())
    (row,) = payload["rows"]
    assert set(row["ratio"]) == {"fwd", "fwd+bwd"}
    assert row["fused_launches"]["fwd"]["triton_launches"] == 1
    assert "ratios: torch time / fused time" in proc.stdout
