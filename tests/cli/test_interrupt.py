"""Ctrl-C during a perturbation run: exit 130, "interrupted", and no outcome invented for the children it
killed. Issue 15: an interrupted run printed "baseline: FAILED ... red_other: crash (exit code -9)" and
"MISSED 1 listed gate" before "interrupted"."""
import os
import signal
import subprocess
import sys
import time

import pytest

from fidelity import project
from fidelity.evidence.paths import CLEAN_RUNS_FILE

INVENTED = ("FAILED", "crash", "MISSED", "red for another reason", "SURVIVED", "exit code -9")


@pytest.mark.parametrize("seconds_into_the_baseline", [5.0])
def test_an_interrupted_perturb_invents_no_outcome(tmp_path, seconds_into_the_baseline):
    root = project.find(__file__).root
    env = {k: v for k, v in os.environ.items() if k != project.ROOT_ENV}
    run = subprocess.Popen([sys.executable, "-m", "fidelity", "perturb", "--all", "--evidence", str(tmp_path)],
                           cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           # Ctrl-C reaches it as at a terminal, even when this suite was started with SIGINT
                           # ignored (a background job of a script): Python would then never raise KeyboardInterrupt
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    before = []
    for line in run.stderr:  # interrupt while the baseline children run
        before.append(line)
        if line.startswith("baseline: ") and "unpatched" in line:
            break
    time.sleep(seconds_into_the_baseline)  # the baseline of every gate runs for longer than that
    run.send_signal(signal.SIGINT)
    out, rest = run.communicate(timeout=60)
    after = rest.splitlines()
    assert run.returncode == 130, "".join(before) + rest
    assert after[-1] == "fidelity perturb: interrupted"
    assert not [line for line in after if any(word in line for word in INVENTED)], rest
    assert out == ""  # no table: nothing completed
    assert not [f for f in tmp_path.rglob("*.json") if f.name != CLEAN_RUNS_FILE]  # and no evidence written for it


def test_a_child_started_while_the_run_is_stopping_is_killed_at_once():
    """A child started after run_child's check and before stop_all's kill saw it must not outlive the
    interrupt: the run would wait for it to finish (a clean run of a slow gate, up to its timeout)."""
    from fidelity.perturb import launch

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    launch.stop_all()
    try:
        launch._register(child)
        assert child.wait(timeout=10) == -9
    finally:
        launch.resume()
        with launch._live_lock:
            launch._live.discard(child)
        child.kill()
