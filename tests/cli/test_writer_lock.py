"""One writer per folder: a second run that would write the same evidence, discovery records or ledger
is refused (exit 2) naming the run that holds it; a holder that dies leaves no lock behind."""
import os
import signal
import subprocess
import sys

import pytest
from toy_project import fidelity, init_project

from fidelity import writer_lock


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return init_project(tmp_path_factory.mktemp("scratch"))


@pytest.mark.parametrize("verb, folder", [
    (["perturb", "--all"], "reports/evidence"),
    (["discover", "--module", "mypaper.softmax"], "reports/discovery"),
    (["report", "--no-gates"], "reports"),
])
def test_a_second_writer_of_the_same_folder_is_refused_naming_the_first(toy, verb, folder):
    with writer_lock.writing(toy / folder, "perturb"):
        run = fidelity(*verb, cwd=toy)
    assert run.returncode == 2, run.stderr[-2000:]
    assert f"another run is writing {toy / folder} (`fidelity perturb`, pid {os.getpid()}, since " in run.stderr


def test_an_observation_writes_nothing_and_takes_no_lock(toy):
    with writer_lock.writing(toy / "reports" / "evidence", "perturb"):
        run = fidelity("perturb", "P1", "--observe", "--json", cwd=toy)
    assert run.returncode == 0, run.stderr[-2000:]


def test_a_holder_killed_by_sigkill_leaves_the_folder_free(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from fidelity import writer_lock\n"
                               f"with writer_lock.writing({str(tmp_path)!r}, 'perturb'):\n"
                               "    print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(writer_lock.FolderBusy):
        with writer_lock.writing(tmp_path, "report"):
            pass
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with writer_lock.writing(tmp_path, "report") as lock:
        assert lock.exists()
