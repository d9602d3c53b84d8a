"""The gate stage of `check` shows done / total while the suite runs: one line rewritten on a terminal,
a plain line every few seconds in a log. Issue 15: it ran for 15 s or more with no sign of progress."""
import io

from toy_project import init_project

from fidelity import project
from fidelity.gaterun import gates_stage

SLOW_GATE = '''import time

import pytest


@pytest.mark.gate(equations=["mypaper.eq1"], mechanism="tempered_softmax")
@pytest.mark.parametrize("k", range(3))
def test_slow(k):
    time.sleep(1.2)
'''


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_one_line_rewritten_and_a_log_a_line_every_few_seconds():
    tty, log = Terminal(), io.StringIO()
    on_tty, in_log = gates_stage.progress_line("gates     ", tty), gates_stage.progress_line("gates     ", log)
    for done in (0, 5, 9):
        on_tty(done, 10)
        in_log(done, 10)
    assert tty.getvalue() == "".join(f"\rgates     {d}/10 instances\x1b[K" for d in (0, 5, 9))
    assert log.getvalue() == "gates     0/10 instances\n"  # the next ones came within 10 s


def test_the_gate_suite_reports_instances_done_out_of_those_collected(tmp_path):
    root = init_project(tmp_path)
    (root / "tests" / "gates" / "test_slow.py").write_text(SLOW_GATE)
    seen = []
    data = gates_stage.run_gate_suite(project.load(root), progress=lambda done, total: seen.append((done, total)))
    collected = len(data["items"])
    assert seen, "a suite running for seconds reported no progress"
    assert all(total in (None, collected) and 0 <= done <= collected for done, total in seen)
    assert seen[-1][1] == collected and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_the_gate_run_says_which_subjects_could_run_as_its_own_process_saw_them(tmp_path, monkeypatch):
    """Issue 15: the ledger's Subjects table said triton was not available while its matrix showed
    triton passing 27 gates: availability was computed again by the renderer, in another environment."""
    root = init_project(tmp_path)
    subject = root / "mypaper" / "subject.py"
    subject.write_text(subject.read_text().replace(
        '    return None\n', '    import os\n    return None if os.environ.get("MYPAPER_HERE") else "MYPAPER_HERE is not set"\n', 1))
    monkeypatch.delenv("MYPAPER_HERE", raising=False)
    here = project.load(root)
    seen = gates_stage.run_gate_suite(here, env={"MYPAPER_HERE": "1"})["subjects"]
    assert [(s["name"], s["available"], s["reason"]) for s in seen] == [("mypaper", True, None)]
    assert [s["reason"] for s in gates_stage.run_gate_suite(here)["subjects"]] == ["MYPAPER_HERE is not set"]
