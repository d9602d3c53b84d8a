"""The Ray executor on a local Ray cluster (ray.init(num_cpus=2), one for the module): a run through it
writes the evidence a local run writes, apart from when each record was written, and a unit whose
worker is killed mid-run is recorded as red for another reason while the rest of the run completes.

The project is the one `fidelity init` writes: its P1..P7, and its module for a small discovery, each
run once on the local executor and once on Ray, as a user runs them (the CLI, from the project). The
local runs are the test run's shared ones (conftest's perturbed_init_project: `perturb --all`, which is
P1..P7; discovered_init_project: `discover --module`), in other copies of the same project: a record
names no folder it was written from, so a copy's records are the records of the project.
The CLI joins the module's cluster by its address, so the project is shipped to the workers and every
path in a unit is mapped to the worker's copy and back."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import ray

from fidelity.perturb.clean_run_store import FILE_NAME as CLEAN_RUNS_FILE
from fidelity.evidence import jsonio, store
from fidelity.evidence.outcome import Outcome
from fidelity.perturb import executor as executor_mod
from fidelity.perturb import ray_executor

from toy_project import fidelity

NAME = "mypaper"  # the shared init project's name
WHEN_WRITTEN = ('"recorded_at"', '"record_sha256"')  # the lines that say when a record was written


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, log_to_driver=False, include_dashboard=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def project(tmp_path_factory, perturbed_init_project) -> Path:
    return perturbed_init_project.copy(tmp_path_factory.mktemp("ray") / NAME)


def _without_when_written(folder: Path) -> dict[str, list[str]]:
    """Every record under `folder` by its file's relative path and gate, as its lines, less those saying when
    it was written."""
    return {f"{p.relative_to(folder).as_posix()}::{gate}": [line for line in jsonio.dumps(rec).splitlines()
                                                           if not line.strip().startswith(WHEN_WRITTEN)]
            for p in sorted(folder.rglob("*.json")) if p.name != CLEAN_RUNS_FILE
            for gate, rec in json.loads(p.read_text(encoding="utf-8"))["records"].items()}


def _kept_clean_runs(folder: Path) -> dict[str, tuple]:
    """The clean runs a run kept, but for how long each first took."""
    return {n: (e["key"], e["runs"], e["outcome"], e["readings"])
            for n, e in json.loads((folder / CLEAN_RUNS_FILE).read_text())["instances"].items()}


def test_p1_to_p7_on_ray_write_the_evidence_the_local_executor_writes(cluster, project, tmp_path,
                                                                      perturbed_init_project):
    local = perturbed_init_project.root / "reports" / "evidence"  # `perturb --all` on the local executor
    on_ray = fidelity("perturb", "P1..P7", "--evidence", str(tmp_path / "ray"), "--executor", "ray",
                      "--ray-address", cluster, cwd=project)
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    assert "perturb: GREEN  7 perturbations: 7 caught by every listed gate" in on_ray.stdout

    records = _without_when_written(local)
    assert len(records) == 70  # 7 perturbations x the project's 10 gates (4 its own, 6 the generic classes')
    assert _without_when_written(tmp_path / "ray") == records
    assert _kept_clean_runs(tmp_path / "ray") == _kept_clean_runs(local)
    # while it ran, the terminal said where the units stood; at the end none is left
    tallies = [line for line in on_ray.stderr.splitlines() if line.startswith("units on the ray executor:")]
    assert tallies and tallies[-1].endswith("0 running, 0 queued")
    assert int(tallies[-1].split(": ")[1].split(" done")[0]) == 20  # forced failure, 10 clean, 7, 2 green after


def test_a_small_discovery_on_ray_records_what_the_local_executor_records(cluster, project, tmp_path,
                                                                          discovered_init_project):
    record = project / "reports" / "discovery" / f"{NAME}.softmax.json"
    local = discovered_init_project  # `discover --module mypaper.softmax` on the local executor
    assert local.returncode == 0, local.stderr[-3000:]
    shutil.copy(local.record, tmp_path / "local.json")
    assert not record.exists()
    on_ray = fidelity("discover", "--module", f"{NAME}.softmax", "--executor", "ray", "--ray-address", cluster,
                      cwd=project)
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    assert "units on the ray executor:" in on_ray.stderr

    local_record, ray_record = (_which_gate_set_aside(path) for path in (tmp_path / "local.json", record))
    assert local_record["module"] == f"{NAME}.softmax"
    assert any(m["outcome"] == "killed" for m in local_record["mutants"])
    assert ray_record == local_record


def _which_gate_set_aside(path: Path) -> dict:
    """A discovery record but when it was written and WHICH gate killed each mutant (only that one did): a batch
    child runs first the gates that killed earlier mutants, then the quickest, so with two gates able to kill a
    mutant either may be named (fidelity/perturb/batch.py); whether a gate killed it is the verdict, and is kept."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("recorded_at", "record_sha256"):
        data.pop(key, None)
    for mutant in data["mutants"]:
        mutant["killed_by"] = bool(mutant["killed_by"])
    return data


def _kill_the_ray_worker_of(marker: Path, killed: dict) -> None:
    """Once the patched child wrote its pid to `marker`: SIGKILL the Ray worker process above it."""
    deadline = time.monotonic() + 60
    while not marker.exists() or not marker.read_text().strip():
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)
    pid = int(marker.read_text())
    while pid > 1:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        if cmdline.startswith("ray::"):
            killed["worker"], killed["cmdline"] = pid, cmdline
            os.kill(pid, signal.SIGKILL)
            return
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # its parent


def test_a_worker_killed_mid_run_leaves_its_unit_red_for_another_reason_and_the_rest_completes(cluster, project,
                                                                                             tmp_path):
    from fidelity.perturb import run
    from fidelity.spec import load_catalogue

    marker = tmp_path / "slow-child.pid"
    p2 = dict(load_catalogue(project / "specs").perturbations["P2"].data)
    slow = {"id": "P_slow", "title": "softmax that hangs until its worker is killed", "target": f"{NAME}.softmax",
            "edits": [{"find": "    if temperature <= 0:\n",
                       "replace": f"    import os, time\n    open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
                                  f"    time.sleep(120)\n    if temperature <= 0:\n"}],
            "gates": p2["gates"]}
    killed: dict = {}
    killer = threading.Thread(target=_kill_the_ray_worker_of, args=(marker, killed))
    killer.start()
    executor = ray_executor.RayExecutor()  # the module's cluster: this process is connected to it
    result = run([p2, slow], repo_root=project, test_paths=("tests/gates",), fixtures_dir=project / "fixtures",
                 evidence_dir=tmp_path / "evidence", jobs=2, timeout_s=90, executor=executor)
    killer.join()

    assert killed, "the patched child never wrote its pid: the slow perturbation did not run"
    lost = next(p for p in result.perturbations if p.id == "P_slow")
    assert lost.outcomes and {o.outcome for o in lost.outcomes} == {Outcome.RED_OTHER}
    assert all(o.detail.startswith("lost by the executor (WorkerCrashedError") for o in lost.outcomes)
    assert not lost.red_by_assertion  # never counted as caught
    # the rest completed: P2 caught by its gate, everything green again, evidence for both written
    caught = next(p for p in result.perturbations if p.id == "P2")
    assert caught.red_by_assertion and not caught.misses
    assert result.green_after["not_green"] == []
    records = store.load_all(tmp_path / "evidence")
    assert {r.perturbation for r in records} == {"P2", "P_slow"}
    assert {r.outcome for r in records if r.perturbation == "P_slow"} == {Outcome.RED_OTHER}
    _gone(int(marker.read_text()), "the hanging child outlived its killed worker")


def _gone(pid: int, why: str) -> None:
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.1)
    raise AssertionError(why)


def test_a_unit_that_needs_a_gpu_the_cluster_lacks_is_lost_at_once(cluster, tmp_path):
    executor = ray_executor.RayExecutor()
    assert executor.gpus() == 0 and executor.default_jobs() == 2
    unit = executor_mod.Unit(label="perturbation-P1", job={"mode": "run", "args": []}, timeout_s=5, gpus=1)
    place = executor_mod.Place(root=tmp_path, workdir=str(tmp_path), pythonpath=(), env={})
    child = executor.run(unit, place)
    assert child.status == "lost"
    assert child.lost == "it needs 1 GPU for its CUDA instances and the cluster has 0"


def test_each_task_asks_for_a_cpu_a_gpu_for_cuda_instances_and_no_retry_by_ray():
    cpu = executor_mod.Unit(label="baseline-1", job={}, timeout_s=1)
    gpu = executor_mod.Unit(label="perturbation-P1", job={}, timeout_s=1, gpus=1)
    assert ray_executor.task_options(cpu)["num_gpus"] == 0
    assert {k: ray_executor.task_options(gpu)[k] for k in ("num_cpus", "num_gpus", "max_retries")} == {
        "num_cpus": 1, "num_gpus": 1, "max_retries": 0}


def test_ctrl_c_cancels_the_ray_tasks_and_invents_no_outcome(cluster, project, tmp_path):
    marker = tmp_path / "slow-child.pid"
    catalogue = tmp_path / "slow.yaml"
    catalogue.write_text(json.dumps({"perturbations": [{
        "id": "slow", "title": "softmax that hangs", "target": f"{NAME}.softmax",
        "edits": [{"find": "    if temperature <= 0:\n",
                   "replace": f"    import os, time\n    open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
                              f"    time.sleep(120)\n    if temperature <= 0:\n"}],
        "gates": ["tests/gates/test_tempered_softmax.py::test_a_temperature_that_is_not_positive_is_refused"]}]}))
    env = {k: v for k, v in os.environ.items() if k != "FIDELITY_ROOT"}
    run = subprocess.Popen([sys.executable, "-m", "fidelity", "perturb", "--file", str(catalogue), "--executor", "ray",
                            "--ray-address", cluster, "--evidence", str(tmp_path / "evidence")],
                           cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           # Ctrl-C reaches it as at a terminal, whatever SIGINT disposition this suite started with
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), "the slow perturbation never ran"
    child = int(marker.read_text())
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 130, err[-3000:]
    assert err.splitlines()[-1] == "fidelity perturb: interrupted"
    assert out == "" and not [f for f in (tmp_path / "evidence").rglob("*.json") if f.name != CLEAN_RUNS_FILE]
    # the tasks it cancelled are not losses of the engine: nothing is run again, no outcome invented
    assert not [line for line in err.splitlines() if "lost by the executor" in line or "red for another" in line]
    _gone(child, "the hanging child outlived the interrupted run")  # its cancelled worker took it along
