"""A fidelity command ends as `sys.exit(code)` would end it, less the interpreter's teardown of every module
and object (fidelity.command_exit): each case runs the same program ending both ways, in a fresh interpreter,
and the two must give the same exit status, output and files; then `python -m fidelity` and the `fidelity`
script are shown to end that way."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ENDINGS = {"exit_now": "from fidelity.command_exit import exit_now\nexit_now({code})",
           "sys.exit": "import sys\nsys.exit({code})"}

CASES = {
    # an exit handler (atexit; weakref.finalize goes through it) writes a file
    "an exit handler runs": ("import atexit, pathlib\n"
                             "atexit.register(lambda: pathlib.Path('handler-ran').write_text('yes'))\n", 3),
    # 5 kB written and never flushed (less than the stream's buffer holds): every byte reaches the reader
    "buffered output is all written": ("import sys\nsys.stdout.write('x' * 5_000 + '\\n')\n", 0),
    # a thread that is not a daemon: waited for, its work done
    "a running thread is waited for": ("import threading, time, pathlib\n"
                                       "def work():\n    time.sleep(0.3)\n    pathlib.Path('thread-ran').write_text('yes')\n"
                                       "threading.Thread(target=work).start()\n", 4),
    # the exit status given
    "the exit status is the command's": ("", 2),
}


BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # output as a program's is: buffered


def _into_a_gone_reader(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`ARGV | head -c 0` as a shell runs it: stdout a pipe nobody reads any more, the output buffered as a
    program's is; stderr captured."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(argv, cwd=cwd, env=BUFFERED, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=300)
    finally:
        os.close(write)


def _run(program: str, cwd: Path, *, close_stdout: bool = False) -> tuple[int, str, list[str]]:
    if close_stdout:  # a reader that goes away before the output is flushed (`fidelity check | head -c 0`)
        proc = _into_a_gone_reader([sys.executable, "-c", program], cwd)
        return proc.returncode, "", sorted(p.name for p in cwd.iterdir())
    proc = subprocess.run([sys.executable, "-c", program], cwd=cwd, env=BUFFERED, capture_output=True, text=True,
                          timeout=120)
    return proc.returncode, proc.stdout, sorted(p.name for p in cwd.iterdir())


@pytest.mark.parametrize("case", CASES)
def test_exit_now_ends_a_process_as_sys_exit_does(case, tmp_path):
    body, code = CASES[case]
    seen = {}
    for ending, tail in ENDINGS.items():
        (tmp_path / ending).mkdir()
        seen[ending] = _run(textwrap.dedent(body) + tail.format(code=code), tmp_path / ending)
    assert seen["exit_now"] == seen["sys.exit"]
    assert seen["exit_now"][0] == code


def test_a_reader_gone_before_the_flush_gives_the_interpreters_status_120(tmp_path):
    body = "import sys\nsys.stdout.write('verdict\\n')\n"
    seen = {}
    for ending, tail in ENDINGS.items():
        (tmp_path / ending).mkdir()
        seen[ending] = _run(body + tail.format(code=0), tmp_path / ending, close_stdout=True)
    assert seen["exit_now"] == seen["sys.exit"] == (120, "", [])


TEARDOWN_PROBE = textwrap.dedent('''
    import pathlib

    class SaysWhenTornDown:
        def __init__(self, path):
            self.path = path

        def __del__(self):
            pathlib.Path(self.path).write_text("torn down")
    ''')


@pytest.mark.parametrize("how", ["python -m fidelity", "the fidelity script"])
def test_a_command_leaves_without_the_interpreters_teardown(how, tmp_path):
    """An object alive until the interpreter tears its module down writes a file from __del__: after a plain
    `sys.exit` it is written (shown first); after a fidelity command (here one that finds no project, exit 2),
    run as `python -m fidelity` runs it or as the installed script does, the command's output and status are
    there and the file is not."""
    (tmp_path / "probe_module.py").write_text(TEARDOWN_PROBE)
    marker = tmp_path / "torn-down"
    keep = f"import probe_module; probe_module.KEPT = probe_module.SaysWhenTornDown({str(marker)!r}); "
    plain = subprocess.run([sys.executable, "-c", keep + "import sys; sys.exit(0)"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and marker.read_text() == "torn down", plain.stderr
    marker.unlink()
    if how == "python -m fidelity":
        run = "import runpy; runpy.run_module('fidelity', run_name='__main__', alter_sys=True)"
    else:
        script = Path(sys.executable).with_name("fidelity")
        run = f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", keep + "import sys; sys.argv = ['fidelity', 'check']; " + run],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no fidelity project found" in proc.stderr, proc.stderr[-2000:]
    assert not marker.exists()


REPO = Path(__file__).resolve().parents[2]


COMMANDS = {"python -m fidelity": [sys.executable, "-m", "fidelity"],
            "the fidelity script": [str(Path(sys.executable).with_name("fidelity"))]}


@pytest.mark.parametrize("how", COMMANDS)
def test_a_reader_gone_while_the_command_still_writes_ends_it_quietly_with_120(how):
    """`fidelity list` writes 18 kB, more than stdout's buffer: the write that finds the reader gone happens
    while the command runs, not in the flush at its end. It ends with the status the interpreter's flush
    gives (120), and stderr has no traceback of the pipe."""
    proc = _into_a_gone_reader([*COMMANDS[how], "list"], REPO)
    code, stderr = proc.returncode, proc.stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr[-2000:]
    assert code == 120, (code, stderr[-2000:])


def test_a_broken_pipe_that_is_not_the_readers_is_raised_as_before(tmp_path):
    """A BrokenPipeError from anything but the standard streams (a child's pipe) is an error of the command:
    end_command leaves it to the interpreter, traceback and status 1."""
    program = ("from fidelity.command_exit import end_command\n"
               "def main():\n    raise BrokenPipeError(32, 'a child went away')\n"
               "end_command(main)\n")
    proc = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=BUFFERED, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "BrokenPipeError: [Errno 32] a child went away" in proc.stderr, proc.stderr
