"""Warm starts: children forked from the zygote behave as cold children do, and a target the
zygote already holds is started cold so its patch still applies."""
from __future__ import annotations

import json
import os
import time

import pytest

from fidelity.perturb import launch, run, warm_start

from .conftest import GATE_ADD, TEST_PATHS, make_toy_repo, toy_perturbations


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    repo = make_toy_repo(tmp_path_factory.mktemp("warm") / "repo")
    env = launch.child_env(str(repo), processes=os.cpu_count())  # one math thread per child
    zygote = warm_start.Zygote(cwd=str(repo), env=env, preload=("pytest",))
    yield repo, env, zygote
    zygote.close()


def _job(repo, args, patch=None):
    return {"mode": "run", "args": args, "rootdir": str(repo), "patch": patch}


def test_a_warm_child_gives_what_a_cold_child_gives(toy, tmp_path):
    repo, env, zygote = toy
    runs = {mode: launch.run_child(_job(repo, [GATE_ADD]), workdir=tmp_path / mode, label="add", cwd=str(repo),
                                   env=env, timeout_s=60, zygote=zygote if mode == "warm" else None)
            for mode in ("warm", "cold")}
    assert runs["warm"].start == "warm" and runs["cold"].start == "cold"
    strip = lambda items: [{k: v for k, v in i.items() if k != "duration_s"} for i in items]
    assert runs["warm"].status == "ok" and len(runs["warm"].items) == 2
    assert strip(runs["warm"].items) == strip(runs["cold"].items)


def test_a_warm_child_that_hangs_is_killed_with_its_group(toy, tmp_path):
    repo, env, zygote = toy
    hang = {"perturbation": "P_hang", "module": "toysubj.arith", "path": str(repo / "toysubj" / "arith.py"),
            "source": (repo / "toysubj" / "arith.py").read_text().replace("    return 2.0 * x", "    while True:\n        pass")}
    t0 = time.perf_counter()
    r = launch.run_child(_job(repo, ["tests/toygate_arith.py::test_scale"], hang), workdir=tmp_path, label="hang",
                         cwd=str(repo), env=env, timeout_s=3, zygote=zygote)
    assert r.status == "timeout" and r.in_flight == "tests/toygate_arith.py::test_scale"
    assert r.returncode == -9 and time.perf_counter() - t0 < 30


def test_a_warm_child_that_exits_reports_its_code(toy, tmp_path):
    repo, env, zygote = toy
    crash = {"perturbation": "P_crash", "module": "toysubj.arith", "path": str(repo / "toysubj" / "arith.py"),
             "source": (repo / "toysubj" / "arith.py").read_text().replace("    return 2.0 * x", "    import os\n    os._exit(3)")}
    r = launch.run_child(_job(repo, ["tests/toygate_arith.py::test_scale"], crash), workdir=tmp_path, label="crash",
                         cwd=str(repo), env=env, timeout_s=60, zygote=zygote)
    assert (r.status, r.returncode) == ("crash", 3)


def test_the_zygote_reports_what_it_holds(toy):
    zygote = toy[2]
    assert zygote.holds("pytest") and zygote.holds("_pytest") and not zygote.holds("toysubj")


def test_a_target_the_zygote_holds_is_started_cold(tmp_path, monkeypatch):
    """The zygote preloads the target itself: a warm child could not patch it (the hook refuses
    an imported module), so the runner starts that perturbation cold and it is still caught."""
    monkeypatch.setattr(warm_start, "PRELOAD", (*warm_start.PRELOAD, "toysubj.arith"))  # torch too: children stay warm
    repo = make_toy_repo(tmp_path / "repo")
    p_add = next(p for p in toy_perturbations() if p["id"] == "P_add")
    r = run([p_add], test_paths=TEST_PATHS[:1], repo_root=repo, reports_dir="reports", jobs=2, timeout_s=60)
    assert r.error is None, r.error
    pr = r.perturbations[0]
    assert pr.child["start"] == "cold" and pr.child["patch_served"] >= 1
    assert [o.outcome for o in pr.outcomes if o.gate == GATE_ADD] == ["red_by_assertion"]
    assert r.baseline["runs"][0]["start"] == "warm"


def test_a_zygote_started_early_is_the_one_the_first_child_gets_once_ready(tmp_path):
    """`perturb P1..P5` starts its zygote before it loads the specs (LazyZygote.start_now): the first `get`
    waits for that one's imports instead of starting another."""
    repo = make_toy_repo(tmp_path / "repo")
    lazy = warm_start.LazyZygote(str(repo), launch.child_env(str(repo), processes=1))
    lazy.start_now()
    started = lazy._zygote
    try:
        assert started is not None
        assert lazy.get() is started and started.holds("pytest")
    finally:
        lazy.close()


def test_a_zygote_closed_before_it_is_ready_is_killed_not_waited_for(tmp_path):
    """A run that stops before its first child (an unknown id, a busy evidence folder) closes a zygote still
    importing: it reads no end of its stdin until torch is in, so it is killed rather than waited for."""
    repo = make_toy_repo(tmp_path / "repo")
    zygote = warm_start.Zygote(cwd=str(repo), env=launch.child_env(str(repo), processes=1), preload=("torch",),
                               wait=False)
    zygote.close()
    assert zygote._proc.returncode == -9  # SIGKILL: not the exit 0 of a zygote that read the end of its stdin


def test_a_ready_zygote_closed_exits_by_itself_with_0(tmp_path):
    """The end of its stdin: it kills what it started, then leaves by os._exit(0), no interpreter shutdown
    to wait for (not the SIGKILL `close` falls back to after 10 s)."""
    repo = make_toy_repo(tmp_path / "repo")
    zygote = warm_start.Zygote(cwd=str(repo), env=launch.child_env(str(repo), processes=1), preload=("pytest",))
    zygote.close()
    assert zygote._proc.returncode == 0


@pytest.mark.parametrize("options, zygote, started", [
    ({}, True, True),  # ids, --all, --file, --observe: children surely run
    ({"stale": True}, True, False),  # may find nothing stale: started by the first child, if any
    ({"cold_start": True}, False, False),
    ({"executor": "ray"}, False, False),  # the Ray workers start their own
], ids=["ids", "stale", "cold-start", "ray"])
def test_perturb_starts_its_zygote_with_the_command_only_where_children_surely_run(tmp_path, monkeypatch,
                                                                                   options, zygote, started):
    from types import SimpleNamespace

    from fidelity.commands import perturb_cmd

    begun = []
    monkeypatch.setattr(warm_start.LazyZygote, "start_now", lambda self: begun.append(self))
    args = SimpleNamespace(**{"project": SimpleNamespace(root=tmp_path), "jobs": None, "stale": False,
                              "cold_start": False, "executor": "local", **options})
    made = perturb_cmd._local_zygote(args)
    assert (made is not None) is zygote and (begun == [made]) is started
