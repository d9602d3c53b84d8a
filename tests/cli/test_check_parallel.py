"""`fidelity check` runs the gate suite on every core (collected once, then a process forked per test
file, one per core at a time: fidelity/gaterun/forked_workers.py) and reports exactly what a serial
run reports: the same instances, outcomes, readings and order."""
import os

from pathlib import Path

import pytest
from toy_project import init_project

from fidelity import project
from fidelity.gaterun import gates_stage

# A second gate file: a failure by the gate's own assertion, a skip, a reading, and the process it ran in.
MORE_GATES = '''import os

import pytest

from fidelity.gates.readings import record


@pytest.mark.gate(equations=["mypaper.eq1"], mechanism="tempered_softmax")
@pytest.mark.parametrize("k", range(4))
def test_more(k):
    with open(os.environ["PIDS"], "a") as f:
        f.write(f"{__name__} {os.getpid()}\\n")
    record(0.5 * k)
    if k == 2:
        pytest.skip("not run: k = 2 is not a case")
    assert k != 3, "k = 3 is refuted"
'''

PID_LINE = '''
def test_pid_of_the_first_file():
    with open(os.environ["PIDS"], "a") as f:
        f.write(f"{__name__} {os.getpid()}\\n")
'''


def _project(tmp_path):
    root = init_project(tmp_path)
    gates = root / "tests" / "gates"
    (gates / "test_more.py").write_text(MORE_GATES)
    for own in sorted(gates.glob("test_tempered_softmax*.py")):  # init's gate files: each says its process too
        own.write_text("import os\n" + own.read_text() + PID_LINE)
    return project.load(root)


def _run(here, jobs, pids):
    pids.write_text("")
    data = gates_stage.run_gate_suite(here, env={"PIDS": str(pids)}, jobs=jobs)
    items = [{k: v for k, v in it.items() if not k.startswith("duration")} for it in data["items"]]
    return items, {line.split()[1] for line in pids.read_text().splitlines()}, data


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the suite runs serially")
def test_two_workers_report_what_a_serial_run_reports_in_its_order(tmp_path):
    here = _project(tmp_path)
    serial, serial_pids, _ = _run(here, 1, tmp_path / "pids")
    parallel, parallel_pids, data = _run(here, 2, tmp_path / "pids")
    assert len(serial_pids) == 1 and len(parallel_pids) == 3  # three files, a fork each (two at a time)
    assert parallel == serial
    outcomes = {it["nodeid"].split("/")[-1]: it["outcome"] for it in serial}
    assert outcomes["test_more.py::test_more[2]"] == "skipped" and outcomes["test_more.py::test_more[3]"] == "failed"
    assert data["returncode"] == 1 and gates_stage.summarise(data["items"])


def test_a_worker_that_dies_is_an_error_that_names_what_went_unreported(tmp_path):
    here = _project(tmp_path)
    more = here.gates / "test_more.py"
    more.write_text(more.read_text().replace('assert k != 3, "k = 3 is refuted"', "if k == 3:\n        os._exit(3)"))
    with pytest.raises(RuntimeError, match=r"did not report 4 instance\(s\) \(a fork died: tests/gates/test_more\.py exited 3 "
                                           r"while running tests/gates/test_more\.py::test_more\[3\]\): .*test_more\.py::test_more"):
        gates_stage.run_gate_suite(here, env={"PIDS": str(tmp_path / "pids")}, jobs=2)


def test_workers_are_one_per_core_never_more_than_the_test_files_with_or_without_xdist(tmp_path, monkeypatch):
    here = _project(tmp_path)
    assert gates_stage.gate_workers(here) == min(2, os.cpu_count() or 1)
    assert gates_stage.gate_workers(here, jobs=1) == 1 and gates_stage.gate_workers(here, jobs=5) == 5
    one_file = sorted(Path(here.gates).glob("test_*.py"))[:1]  # check --subject's selection of one file
    assert gates_stage.gate_workers(here, files=one_file) == 1
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # no pytest-xdist: the same
    assert gates_stage.gate_workers(here) == min(2, os.cpu_count() or 1)


def test_the_parallel_run_needs_no_pytest_xdist(tmp_path):
    """The forks are our own plugin: with pytest-xdist's plugin off, the run is still one process
    per file and reports what a serial run reports (an `-n` would not even be understood)."""
    here = _project(tmp_path)
    pids = tmp_path / "pids"
    serial, _, _ = _run(here, 1, pids)
    pids.write_text("")
    data = gates_stage.run_gate_suite(here, env={"PIDS": str(pids)}, jobs=2, extra_args=("-p", "no:xdist"))
    assert [{k: v for k, v in it.items() if not k.startswith("duration")} for it in data["items"]] == serial
    assert len({line.split()[1] for line in pids.read_text().splitlines()}) == 3
