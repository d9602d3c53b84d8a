"""CallsSoFar hears every call of a wanted file's functions since it started, cumulatively (an earlier call may
have left state a later result reads), in threads started after it and in the runner's own forks; and it says
None, never an incomplete list, once another tracer took over, the code started a process, or CUDA started.
Each case runs in a fresh interpreter: a trace function and an audit hook are the whole process's."""
import json
import subprocess
import sys
import textwrap

import pytest

MODULE = textwrap.dedent('''
    def used(x):
        return len(helper(x)) + 1


    def helper(x):
        return [v for v in range(x)]


    def never():
        return 0
''')


def heard(tmp_path, body: str, listen: str = "CallsSoFar([{path!r}])"):
    """What seen() returned at the end of `body` (a script that has `calls` started and `m` imported)."""
    (tmp_path / "m.py").write_text(MODULE)
    script = textwrap.dedent('''
        import json, os, subprocess, sys, threading
        sys.path.insert(0, {folder!r})
        from fidelity.perturb.calls_so_far import CallsSoFar
        calls = LISTEN
        calls.start()
        import m
    ''').replace("LISTEN", listen).format(folder=str(tmp_path), path=str(tmp_path / "m.py")) + textwrap.dedent(body) + textwrap.dedent('''
        seen = calls.seen()
        print(json.dumps(None if seen is None else sorted(seen[{path!r}])))
    ''').format(path=str(tmp_path / "m.py"))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


MODULE_LINE, USED_LINE, HELPER_LINE, LISTCOMP_LINE, NEVER_LINE = 1, 2, 6, 7, 10  # first lines in MODULE (it starts with a newline)


def test_the_calls_made_so_far_are_heard_and_a_function_never_called_is_not(tmp_path):
    assert heard(tmp_path, "m.used(3)\n") == [MODULE_LINE, USED_LINE, HELPER_LINE, LISTCOMP_LINE]


def test_what_an_earlier_call_ran_stays_in_the_record(tmp_path):
    assert heard(tmp_path, "m.helper(2)\nm.never.__name__\n") == [MODULE_LINE, HELPER_LINE, LISTCOMP_LINE]


def test_calls_heard_before_the_files_were_named_are_kept_for_them(tmp_path):
    # a run names its target files once it has collected: what collection called counts
    later = "m.never()\ncalls.narrow([{path!r}])\nm.helper(1)\n".format(path=str(tmp_path / "m.py"))
    assert heard(tmp_path, later, listen="CallsSoFar()") == [MODULE_LINE, HELPER_LINE, LISTCOMP_LINE, NEVER_LINE]
    assert heard(tmp_path, "m.used(1)\n", listen="CallsSoFar()") is None  # never narrowed: nothing to say


def test_a_thread_started_after_the_start_is_heard(tmp_path):
    assert heard(tmp_path, "t = threading.Thread(target=m.used, args=(2,)); t.start(); t.join()\n") == \
        [MODULE_LINE, USED_LINE, HELPER_LINE, LISTCOMP_LINE]


@pytest.mark.parametrize("what", [
    "subprocess.run([sys.executable, '-c', 'pass'])",
    "os.system('true')",
    "sys.settrace(None); m.never(); sys.settrace(calls._call)",  # replaced, then put back: never() went unheard
])
def test_a_process_started_or_a_tracer_swapped_makes_the_record_untrusted(tmp_path, what):
    assert heard(tmp_path, f"m.used(1)\n{what}\n") is None


def test_a_program_that_is_not_python_leaves_the_record_trusted(tmp_path):
    # platform.architecture() runs `file`; a compiler runs for a kernel: neither can call the project's functions
    assert heard(tmp_path, "m.used(1)\nsubprocess.run(['true'])\n") == [MODULE_LINE, USED_LINE, HELPER_LINE,
                                                                          LISTCOMP_LINE]


@pytest.mark.parametrize("program", ["sh", "python3", "/no/such/program"])
def test_a_shell_python_or_a_program_that_cannot_be_read_may_run_python(program):
    from fidelity.perturb.calls_so_far import may_run_python
    assert may_run_python(program) and may_run_python(sys.executable) and not may_run_python("true")


def test_the_runners_own_fork_goes_on_listening_and_any_other_fork_does_not(tmp_path):
    forked = '''
        m.helper(1)
        pid = {fork}
        if pid == 0:
            m.used(1)
            seen = calls.seen()
            print(json.dumps(None if seen is None else sorted(next(iter(seen.values())))), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        sys.exit(0)
    '''
    assert heard(tmp_path, forked.format(fork="calls.fork()")) == [MODULE_LINE, USED_LINE, HELPER_LINE, LISTCOMP_LINE]
    assert heard(tmp_path, forked.format(fork="os.fork()")) is None
