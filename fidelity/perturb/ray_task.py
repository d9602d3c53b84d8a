"""A unit's trip to a Ray worker and back: what the driver sends, what the worker does, what comes back.

The unit names paths of the driver's machine: the project root, the run's scratch directory, the
fidelity package. On the worker, `relocate` maps them to its own: the scratch directory to a fresh
temporary one; the root to the folder Ray unpacked the shipped project into (the task's working
directory), or to the same path when the project is not shipped (a cluster on this machine, or one
that shares the filesystem); fidelity's folder to the worker's. The child then runs on a
LocalExecutor of the worker process (one zygote per process and project, as on the driver), in an
environment built the way the driver builds its own (launch.child_env), with the driver's FIDELITY_*,
TRITON_* and math-thread variables, and math threads capped to the CPUs Ray gave the task.

`run_unit` yields twice: {"started": {node, pid}} once the task runs (the driver's tally then counts
it running), then what the child left: {"returncode", "timed_out", "wall_s", "output_tail", "start",
"versions", "files"}, every file it wrote under its scratch directory by relative path. `receive`
writes those files where a local child would have left them and reads them with launch.read_child,
so the runner judges a Ray unit exactly as a local one.
"""
from __future__ import annotations

import json
import os
import platform
import tempfile
from pathlib import Path

from fidelity.child_env import THREAD_VARIABLES
from fidelity.perturb import executor as executor_mod
from fidelity.perturb import launch
from fidelity.perturb import warm_start as warm_start_mod

FORWARDED_PREFIXES = ("FIDELITY_", "TRITON_")  # the driver's settings a child reads, sent with each unit
NOT_PATHS = frozenset({"source"})  # a patch's text is code, never relocated
SENT_BACK_SKIPS = ("job.json", ".keep.json")  # what the driver wrote itself: not sent back
VERSION_KEYS = ("python", "torch", "pytest", "fidelity")  # what must match the driver's (evidence names them)


def fidelity_parent() -> str:
    """The folder holding the `fidelity` package on this machine."""
    import fidelity

    return os.path.dirname(os.path.dirname(os.path.abspath(fidelity.__file__)))


def forwarded_environment(env: dict | None = None) -> dict[str, str]:
    """The driver's variables a child on another machine needs too."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if k.startswith(FORWARDED_PREFIXES) or k in THREAD_VARIABLES}


def payload(unit: executor_mod.Unit, place: executor_mod.Place, *, shipped: bool, warm_start: bool) -> dict:
    """What the driver sends for `unit` (plain data: Ray pickles it)."""
    return {"label": unit.label, "job": unit.job, "timeout_s": unit.timeout_s, "target": unit.target,
            "gpus": unit.gpus, "root": str(place.root), "workdir": str(place.workdir),
            "pythonpath": list(place.pythonpath), "fidelity_parent": fidelity_parent(),
            "forward": forwarded_environment(), "shipped": shipped, "warm_start": warm_start}


def relocate(obj, mapping: dict[str, str], key: str | None = None):
    """`obj` (a job, or what a child wrote) with every string, key or value, that is one of
    mapping's paths or lies under one moved to its image (the longest path first); a patch's
    source is left as it is."""
    if isinstance(obj, dict):
        return {relocate(k, mapping): relocate(v, mapping, k) for k, v in obj.items()}
    if isinstance(obj, list):
        return [relocate(v, mapping, key) for v in obj]
    if not isinstance(obj, str) or key in NOT_PATHS:
        return obj
    for old, new in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
        if obj == old or obj.startswith(old.rstrip(os.sep) + os.sep):
            return new + obj[len(old):]
    return obj


class ProjectNotOnWorker(RuntimeError):
    """The project root is not on this worker and was not shipped."""


def run_unit(sent: dict):
    """In a Ray worker: run the unit `sent` (payload) to its end; yields twice (module docstring)."""
    root = os.getcwd() if sent["shipped"] else sent["root"]
    if not os.path.isdir(root):
        raise ProjectNotOnWorker(f"the project {sent['root']} is not on node {platform.node()}: give --ray-address "
                                 f"so that it is shipped, or put it at the same path on every node")
    yield {"started": {"node": platform.node(), "pid": os.getpid()}}
    with tempfile.TemporaryDirectory(prefix="fidelity-ray-") as scratch:
        mapping = {sent["workdir"]: scratch, sent["root"]: root, sent["fidelity_parent"]: fidelity_parent()}
        pythonpath = tuple(relocate(list(sent["pythonpath"]), mapping))
        env = _environment(root, pythonpath, relocate(sent["forward"], mapping))
        job = relocate(sent["job"], mapping)
        _make_parents(job, scratch)  # folders the driver made in its scratch directory (batch results)
        # the GPU Ray gave this task (or none): a child applies its job's env before CUDA starts
        job["env"] = dict(job.get("env") or {}, CUDA_VISIBLE_DEVICES=os.environ.get("CUDA_VISIBLE_DEVICES"))
        unit = executor_mod.Unit(label=sent["label"], job=job, timeout_s=sent["timeout_s"], target=sent["target"],
                                 gpus=sent["gpus"])
        place = executor_mod.Place(root=Path(root), workdir=scratch, pythonpath=pythonpath, env=env)
        child = _worker_executor(root, env, sent["warm_start"]).run(unit, place)
        back = {new: old for old, new in mapping.items()}  # what the child wrote names the driver's paths again
        yield {"returncode": child.returncode, "timed_out": child.timed_out, "wall_s": child.wall_s,
               "output_tail": child.output_tail, "start": child.start, "versions": versions(),
               "files": _files(scratch, back)}


def receive(back: dict, unit: executor_mod.Unit, place: executor_mod.Place, driver_versions: dict) -> launch.ChildRun:
    """On the driver: the child's files put where a local child leaves them, and read as its ChildRun;
    lost when the worker's versions are not the driver's."""
    start = f"ray {back['start']}"
    differ = [f"{k} {back['versions'].get(k)} (driver: {driver_versions.get(k)})"
              for k in VERSION_KEYS if back["versions"].get(k) != driver_versions.get(k)]
    if differ:
        return launch.lost_child(unit.label, "the worker's versions differ from the driver's, so its evidence "
                                             "would name versions that did not run it: " + ", ".join(differ),
                                 wall_s=back["wall_s"], start=start)
    for rel, data in back["files"].items():
        path = Path(place.workdir) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return launch.read_child(unit.label, launch.results_path(place.workdir, unit.label),
                             returncode=back["returncode"], timed_out=back["timed_out"], wall_s=back["wall_s"],
                             output_tail=back["output_tail"], start=start)


def versions() -> dict:
    from fidelity.evidence.record import versions as record_versions

    mine = record_versions()
    return {k: mine.get(k) for k in VERSION_KEYS}


_EXECUTORS: dict[tuple, executor_mod.LocalExecutor] = {}  # per worker process: (root, env, warm) -> executor


def _worker_executor(root: str, env: dict, warm_start: bool) -> executor_mod.LocalExecutor:
    key = (root, tuple(sorted(env.items())), warm_start)
    if key not in _EXECUTORS:
        zygote = warm_start_mod.LazyZygote(root, env) if warm_start else None
        _EXECUTORS[key] = executor_mod.LocalExecutor(zygote, owns_zygote=True)
    return _EXECUTORS[key]


def _environment(root: str, pythonpath: tuple[str, ...], forwarded: dict[str, str]) -> dict:
    """A cold child's environment on this worker: built as the driver builds its own, from this
    worker's variables and the driver's forwarded ones, with this task's CPUs as the math threads
    (unless the driver set them). CUDA_VISIBLE_DEVICES goes with each job instead: Ray sets it per task."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(FORWARDED_PREFIXES) and k not in THREAD_VARIABLES and k != "CUDA_VISIBLE_DEVICES"}
    env = launch.child_env(root, list(pythonpath), base=dict(base, **forwarded))
    for var in THREAD_VARIABLES:
        env.setdefault(var, str(_task_cpus()))
    return env


def _task_cpus() -> int:
    try:
        import ray

        return max(1, int(ray.get_runtime_context().get_assigned_resources().get("CPU", 1)))
    except Exception:  # noqa: BLE001 - outside a Ray task (tests call run_unit directly): one CPU
        return 1


def _make_parents(obj, scratch: str) -> None:
    """The parent folder of every path in the job that lies in the scratch directory."""
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, list):
        for v in obj:
            _make_parents(v, scratch)
    elif isinstance(obj, str) and obj.startswith(scratch + os.sep):
        os.makedirs(os.path.dirname(obj), exist_ok=True)


def _files(scratch: str, back: dict[str, str]) -> dict[str, bytes]:
    """Every file the child left under `scratch`, by relative path; the JSON ones (results, their
    .partial lines, a fork's status) with this worker's paths mapped `back` to the driver's."""
    out = {}
    for path in sorted(Path(scratch).rglob("*")):
        if path.is_file() and not path.name.endswith(SENT_BACK_SKIPS):
            out[path.relative_to(scratch).as_posix()] = _mapped_back(path, back)
    return out


def _mapped_back(path: Path, back: dict[str, str]) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".json.partial"):
        return b"".join(_json_mapped(line, back) for line in data.splitlines(keepends=True))
    if path.name.endswith(".json"):
        return _json_mapped(data, back)
    return data


def _json_mapped(text: bytes, back: dict[str, str]) -> bytes:
    """One JSON document (or line) with its paths mapped; text that is not whole JSON (cut short by
    a kill) as it is, for the reader to skip as it would here."""
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    return json.dumps(relocate(obj, back)).encode("utf-8") + (b"\n" if text.endswith(b"\n") else b"")
