"""The gate run's pytest forked from check's parent (fidelity.gaterun.warm_pytest) starts as a fresh
`python -m pytest` would, and is not forked where it could not: each case in a fresh interpreter, since
the test process itself has threads and torch."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROBE = textwrap.dedent('''
    import json, os, sys
    import torch

    import projectcode  # at the root, the test in a folder below: found as `python -m pytest` finds it

    def test_probe():
        with open(os.environ["PROBE_OUT"], "w") as f:
            json.dump({"path": sys.path, "cwd": os.getcwd(), "threads": torch.get_num_threads(),
                       "own_session": os.getsid(0) == os.getpid(), "parent_pid": os.getppid(),
                       "only_in_child": os.environ.get("ONLY_IN_CHILD"),
                       "only_in_parent": os.environ.get("ONLY_IN_PARENT"),
                       "forked": "fidelity.gaterun.warm_pytest" in sys.modules}, f)
        assert os.environ.get("PROBE_FAIL") is None
    ''')

DRIVER = textwrap.dedent('''
    import json, os, sys, threading
    from fidelity.gaterun import warm_pytest

    root = sys.argv[1]
    said = {"pid": os.getpid()}

    # never forked beside another thread
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    said["with_a_thread"] = warm_pytest.WarmPytest.fork_if_safe(root) is not None
    stop.set(); other.join()

    # nor once a module of the project is imported: the gate run imports it itself
    sys.path.insert(0, root)
    import projectcode
    said["with_project_code"] = warm_pytest.WarmPytest.fork_if_safe(root) is not None
    del sys.modules["projectcode"]; sys.path.remove(root)

    # the program that started this one (here the project's own script, as `fidelity`'s is its venv's): no bar
    sys.modules["__main__"].__file__ = os.path.join(root, "launcher.py")
    print("buffered in the parent", end="")  # written once, by the parent, not again by a fork
    # a fork not given a command ends at once
    unused = warm_pytest.WarmPytest([root])
    unused.close()
    said["unused_exit"] = unused.returncode

    warm = warm_pytest.WarmPytest.fork_if_safe(root)
    said["forked"] = warm is not None
    env = {k: v for k, v in os.environ.items() if k != "ONLY_IN_PARENT"}
    env.update(ONLY_IN_CHILD="yes", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    said["takes_another_hash_seed"] = warm.takes({**env, "PYTHONHASHSEED": "7"})

    def run(out, warm=None, **extra):
        cmd = [sys.executable, "-m", "pytest", "tests/test_probe.py", "-q", "-p", "no:cacheprovider"]
        with open(out + ".out", "w+") as o, open(out + ".err", "w+") as e:
            proc = warm_pytest.start(cmd, cwd=root, env={**env, "PROBE_OUT": out, **extra}, stdout=o, stderr=e,
                                     warm=warm)
            code = proc.wait(timeout=120)
            o.seek(0)
            text = o.read()
            return code, "1 passed" in text or "1 failed" in text  # pytest's summary, in the file given

    said["warm_run"] = run(sys.argv[2] + "/warm.json", warm=warm, PROBE_FAIL="1")  # its exit code, 1
    # beside another thread (as in a process that imported torch itself: numpy's BLAS pool), a fresh interpreter
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    said["fresh_run"] = run(sys.argv[2] + "/fresh.json")
    stop.set(); other.join()
    print(json.dumps(said))
    ''')


@pytest.fixture(scope="module")
def driven(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    (root / "tests").mkdir()
    (root / "tests" / "test_probe.py").write_text(PROBE)
    (root / "projectcode.py").write_text("VALUE = 1\n")
    out = tmp_path_factory.mktemp("out")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OMP_", "MKL_"))}
    env.pop("PYTHONUNBUFFERED", None)  # the parent's print stays in its buffer as it forks
    env["ONLY_IN_PARENT"] = "yes"
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(root), str(out)], cwd=out, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("buffered in the parent{"), proc.stdout[:300]
    said = json.loads(proc.stdout[len("buffered in the parent"):])
    probes = {name: json.loads((out / f"{name}.json").read_text()) for name in ("warm", "fresh")}
    return root, said, probes


def test_the_gate_run_is_not_forked_beside_another_thread_or_after_the_projects_code_was_imported(driven):
    _, said, _ = driven
    assert said["with_a_thread"] is False
    assert said["with_project_code"] is False


def test_a_fork_never_given_its_command_ends_at_once_with_exit_0(driven):
    assert driven[1]["unused_exit"] == 0


def test_a_command_under_another_python_variable_is_not_run_in_the_fork(driven):
    assert driven[1]["takes_another_hash_seed"] is False


def test_the_forked_run_sees_what_a_fresh_python_m_pytest_sees(driven):
    root, said, probes = driven
    warm, fresh = probes["warm"], probes["fresh"]
    assert said["forked"] is True and warm["forked"] is True and fresh["forked"] is False
    assert said["fresh_run"] == [0, True]
    seen = {k: v for k, v in warm.items() if k != "forked"}
    assert seen == {k: v for k, v in fresh.items() if k != "forked"}
    assert Path(warm["cwd"]) == root and Path(warm["path"][1]) == root  # after the test's folder, put first by pytest
    assert warm["threads"] == 1, "torch's threads as OMP_NUM_THREADS=1 in the command's environment sets them"
    assert warm["own_session"] is True and warm["parent_pid"] == said["pid"]
    assert warm["only_in_child"] == "yes" and warm["only_in_parent"] is None


def test_the_forked_run_exits_as_pytest_does_its_output_in_the_files_given(driven):
    assert driven[1]["warm_run"] == [1, True]


def test_a_parent_under_other_interpreter_flags_is_not_forked(tmp_path):
    """`python -O` would strip the asserts of the fork's code; the fresh pytest runs without it."""
    probe = ("from fidelity.gaterun import warm_pytest; import sys; warm = warm_pytest.WarmPytest.fork_if_safe(sys.argv[1]); "
             "print(type(warm).__name__); warm and warm.close()")
    for flags, said in (([], "WarmPytest"), (["-O"], "NoneType")):
        out = subprocess.run([sys.executable, *flags, "-c", probe, str(tmp_path)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.startswith(said), (flags, out.stdout, out.stderr[-2000:])
