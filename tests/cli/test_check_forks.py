"""`fidelity check` collects the gate suite once and runs its files in processes forked after
collection (fidelity/gaterun/forked_workers.py): issue 54, where each pytest-xdist worker imported
torch and collected every instance before running its share. A fork that dies reports nothing
of what it ran, and the run says so, naming the instance it was in."""
import json
import os
import time
from pathlib import Path

import pytest
from toy_project import init_project

from fidelity import project
from fidelity.child_env import THREAD_VARIABLES
from fidelity.gaterun import gates_stage

# A gate file whose import (pytest's collection of it) leaves a line: the process that collected it.
COUNTED = '''import os

import pytest

with open(os.environ["COLLECTED"], "a") as _f:
    _f.write(f"{os.getpid()}\\n")


@pytest.mark.gate(equations=["mypaper.eq1"], mechanism="tempered_softmax")
@pytest.mark.parametrize("k", range(3))
def test_counted(k):
    if k == 1:
        DIES
    assert k >= 0
'''


def _project(tmp_path, dies: str = "pass"):
    root = init_project(tmp_path)
    (root / "tests" / "gates" / "test_counted.py").write_text(COUNTED.replace("DIES", dies))
    return project.load(root)


def test_the_suite_is_collected_once_whatever_the_workers(tmp_path):
    here = _project(tmp_path)
    collected = tmp_path / "collected"
    for jobs in (1, 2):
        collected.write_text("")
        data = gates_stage.run_gate_suite(here, env={"COLLECTED": str(collected)}, jobs=jobs)
        assert [it["outcome"] for it in data["items"] if "test_counted" in it["nodeid"]] == ["passed"] * 3
        assert len(collected.read_text().splitlines()) == 1, f"jobs={jobs}: the gate file was collected more than once"


@pytest.mark.parametrize("dies", ["os._exit(0)", "os.kill(os.getpid(), __import__('signal').SIGKILL)"])
def test_a_fork_that_dies_reports_none_of_its_file_and_the_run_names_the_instance_it_was_in(tmp_path, dies):
    here = _project(tmp_path, dies)
    with pytest.raises(RuntimeError, match=r"did not report 3 instance\(s\).*running tests/gates/test_counted\.py::"
                                           r"test_counted\[1\]") as raised:
        gates_stage.run_gate_suite(here, env={"COLLECTED": str(tmp_path / "collected")}, jobs=2)
    assert "test_counted.py::test_counted[0]" in str(raised.value)  # passed before the fork died: not a verdict


def test_killing_the_run_kills_its_forks(tmp_path):
    """A check stopped early (an error in another stage, ^C) leaves no fork running a gate."""
    here = _project(tmp_path, "import time; open(os.environ['COLLECTED'] + '.pid', 'w').write(str(os.getpid())); "
                              "time.sleep(60)")
    pid_file = tmp_path / "collected.pid"
    with gates_stage.GateSuiteRun(here, env={"COLLECTED": str(tmp_path / "collected")}, jobs=2):
        for _ in range(600):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.1)
        fork = int(pid_file.read_text())
    for _ in range(50):
        if not _running(fork):
            return
        time.sleep(0.1)
    pytest.fail(f"fork {fork} still runs after the gate run was left")


def _running(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (killed, waiting for whoever reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


# Collection that starts torch's OpenMP pool (a parallel elementwise op at import), and instances that
# say how many threads their process computes on.
THREADED = '''import os

import pytest
import torch

_x = torch.randn(1500, 1500)
(_x * 2 + 1).exp().sum()  # on OMP_NUM_THREADS=2: the collecting process's OpenMP pool starts here


@pytest.mark.gate(equations=["mypaper.eq1"], mechanism="tempered_softmax")
@pytest.mark.parametrize("k", range(2))
def test_threaded(k):
    y = (_x * 2 + 1).exp().sum()  # a parallel region in the fork: it hangs if the parent's pool had started
    with open(os.environ["THREADS"], "a") as f:
        f.write(f"{torch.get_num_threads()}\\n")
    assert torch.isfinite(y)
'''


def test_forks_of_a_collection_that_computed_in_parallel_run_on_the_threads_asked_for(tmp_path):
    root = init_project(tmp_path)
    (root / "tests" / "gates" / "test_threaded.py").write_text(THREADED)
    threads, started = tmp_path / "threads", time.monotonic()

    def in_time(done, total):
        if time.monotonic() - started > 120:
            raise TimeoutError(f"the gate run hangs ({done}/{total} instances after 120 s)")

    two = {var: "2" for var in THREAD_VARIABLES}  # what child_env gives each of 2 processes on 4 cores
    with gates_stage.GateSuiteRun(project.load(root), env={"THREADS": str(threads), **two}, jobs=2) as run:
        data = run.wait(in_time)
    assert [it["outcome"] for it in data["items"] if "test_threaded" in it["nodeid"]] == ["passed"] * 2
    assert threads.read_text().split() == ["2", "2"]  # what child_env asked each of them for


class _Item:
    def __init__(self, nodeid):
        self.nodeid = nodeid


def test_files_start_longest_first_as_the_last_whole_run_timed_them_else_in_collection_order(tmp_path):
    from fidelity.gaterun.forked_workers import ForkedFiles, by_file

    files = by_file([_Item(f"tests/gates/test_{name}.py::test_{k}") for name in "abc" for k in range(2)])
    assert [path for path, _ in files] == [f"tests/gates/test_{name}.py" for name in "abc"]
    seconds = tmp_path / "seconds.json"
    assert ForkedFiles(2, str(seconds), None).order(files) == [0, 1, 2]  # never timed
    seconds.write_text('{"tests/gates/test_a.py": 1.0, "tests/gates/test_c.py": 5.0}')
    assert ForkedFiles(2, str(seconds), None).order(files) == [2, 0, 1]  # b not timed: after those that were


def test_a_run_of_every_instance_times_its_files_and_a_narrowed_one_forgets_none(tmp_path):
    here = _project(tmp_path)
    seconds = here.root / ".fidelity-cache" / gates_stage.FILE_SECONDS
    gates_stage.run_gate_suite(here, env={"COLLECTED": str(tmp_path / "collected")}, jobs=2)
    timed = json.loads(seconds.read_text())
    assert sorted(timed) == sorted(here.relative(f) for f in gates_stage.gate_files(here.gates))
    assert all(s > 0 for s in timed.values())
    with gates_stage.GateSuiteRun(here, env={"COLLECTED": str(tmp_path / "collected")}, jobs=2,
                                  keep={"tests/gates/test_counted.py::test_counted[0]"}) as run:
        assert [it["nodeid"] for it in run.wait()["items"]] == ["tests/gates/test_counted.py::test_counted[0]"]
    assert json.loads(seconds.read_text()) == timed
    two = sorted(gates_stage.gate_files(here.gates))[:2]  # a run of some files (check --subject) times those
    with gates_stage.GateSuiteRun(here, env={"COLLECTED": str(tmp_path / "collected")}, jobs=2, files=two) as run:
        assert run.wait()["items"]
    assert sorted(json.loads(seconds.read_text())) == sorted(timed)
