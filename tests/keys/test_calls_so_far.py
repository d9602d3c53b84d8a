"""CallsSoFar hears every call of a wanted file's units since it started, cumulatively (an earlier call may
have left state a later result reads), in threads and in the runner's own forks, by a marker its finder puts
at the start of each unit as the module is imported; it leaves out a file whose code ran unmarked, and says
None, never an incomplete list, once the code started a process that may run Python.
Each case runs in a fresh interpreter: an audit hook and a finder are the whole process's."""
import json
import subprocess
import sys
import textwrap

import pytest

MODULE = textwrap.dedent('''
    import functools


    def used(x):
        """Its docstring stays its docstring."""
        return len(helper(x)) + 1


    def helper(x):
        return [v for v in range(x)]


    def never():
        return 0


    class Box:
        @staticmethod
        def make():
            return Box()

        def fail(self):
            raise ValueError("from fail")


    @functools.lru_cache(maxsize=None)
    def cached(x):
        return x
''')


def _line(text: str) -> int:
    """The number of MODULE's line that holds `text` (its first line is line 1)."""
    return next(n for n, line in enumerate(MODULE.splitlines(), start=1) if text in line)


USED, HELPER, NEVER, MAKE, FAIL = (_line(f"def {name}(") for name in ("used", "helper", "never", "make", "fail"))


def heard(tmp_path, body: str, listen: str = "CallsSoFar([{path!r}])", before: str = ""):
    """What seen() said of m.py at the end of `body` (a script that has `calls` started and `m` imported):
    its def lines, "left out", or None. `before`: run before the listening starts."""
    (tmp_path / "m.py").write_text(MODULE)
    script = textwrap.dedent('''
        import json, os, subprocess, sys, threading
        sys.path.insert(0, {folder!r})
        from fidelity.perturb.calls_so_far import CallsSoFar
        BEFORE
        calls = LISTEN
        calls.start()
        import m
    ''').replace("LISTEN", listen).replace("BEFORE", before).format(folder=str(tmp_path), path=str(tmp_path / "m.py"))
    script += textwrap.dedent(body) + textwrap.dedent('''
        seen = calls.seen()
        print(json.dumps(None if seen is None else sorted(seen[{path!r}]) if {path!r} in seen else "left out"))
    ''').format(path=str(tmp_path / "m.py"))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_units_called_so_far_are_heard_and_a_function_never_called_is_not(tmp_path):
    # helper's list comprehension runs inside helper: a unit is heard once, whatever runs within it
    assert heard(tmp_path, "m.used(3)\n") == [USED, HELPER]


def test_what_an_earlier_call_ran_stays_in_the_record(tmp_path):
    assert heard(tmp_path, "m.helper(2)\nm.never.__name__\n") == [HELPER]


def test_calls_heard_before_the_files_were_named_are_kept_for_them(tmp_path):
    # a run names its target files once it has collected: what collection called counts
    later = "m.never()\ncalls.narrow([{path!r}])\nm.helper(1)\n".format(path=str(tmp_path / "m.py"))
    assert heard(tmp_path, later, listen="CallsSoFar()") == [HELPER, NEVER]
    assert heard(tmp_path, "m.used(1)\n", listen="CallsSoFar()") is None  # never narrowed: nothing to say


def test_a_thread_and_a_method_are_heard_and_a_cached_function_is_the_skeletons(tmp_path):
    # lru_cache may answer without running the body: function_meaning keeps it in the skeleton, unmarked
    body = "t = threading.Thread(target=m.used, args=(2,)); t.start(); t.join()\nm.Box.make()\nm.cached(1)\n"
    assert heard(tmp_path, body) == [USED, HELPER, MAKE]


def test_the_markers_change_no_docstring_and_no_line_of_a_traceback(tmp_path):
    body = '''
        import traceback
        assert m.used.__doc__ == "Its docstring stays its docstring.", m.used.__doc__
        try:
            m.Box().fail()
        except ValueError as exc:
            assert traceback.extract_tb(exc.__traceback__)[-1].lineno == RAISE, traceback.format_exc()
    '''.replace("RAISE", str(_line("raise ValueError")))
    assert heard(tmp_path, body) == [FAIL]


def test_a_tracer_set_by_the_code_takes_nothing_from_the_record(tmp_path):
    assert heard(tmp_path, "sys.settrace(lambda *a: None); m.never(); sys.settrace(None)\n") == [NEVER]


@pytest.mark.parametrize("what", ["subprocess.run([sys.executable, '-c', 'pass'])", "os.system('true')"])
def test_a_process_started_that_may_run_python_makes_the_record_untrusted(tmp_path, what):
    assert heard(tmp_path, f"m.used(1)\n{what}\n") is None


def test_a_program_that_is_not_python_leaves_the_record_trusted(tmp_path):
    # platform.architecture() runs `file`; a compiler runs for a kernel: neither can call the project's functions
    assert heard(tmp_path, "m.used(1)\nsubprocess.run(['true'])\n") == [USED, HELPER]


@pytest.mark.parametrize("program", ["sh", "python3", "/no/such/program"])
def test_a_shell_python_or_a_program_that_cannot_be_read_may_run_python(program):
    from fidelity.perturb.calls_so_far import may_run_python
    assert may_run_python(program) and may_run_python(sys.executable) and not may_run_python("true")


def test_a_module_imported_before_the_listening_started_is_left_out(tmp_path):
    assert heard(tmp_path, "m.used(1)\n", before="import m") == "left out"


@pytest.mark.parametrize("alias", ["alias.py", "linked/m.py"])
def test_the_files_code_run_under_a_name_linked_to_it_is_left_out(tmp_path, alias):
    # the file's code ran unmarked under a name that is a link to it (the file's, or its folder's): the same file
    link, target = (tmp_path / alias, tmp_path / "m.py") if alias == "alias.py" else (tmp_path / "linked", tmp_path)
    link.symlink_to(target)
    run_as_alias = (f"import importlib.util as u; s = u.spec_from_file_location('x', {str(tmp_path / alias)!r}); "
                    "s.loader.exec_module(u.module_from_spec(s))\n")
    assert heard(tmp_path, "m.used(1)\n" + run_as_alias) == "left out"


@pytest.mark.parametrize("how", [
    "import importlib.util; s = importlib.util.spec_from_file_location('m2', m.__file__); "
    "s.loader.exec_module(importlib.util.module_from_spec(s))",
    "exec(compile(open(m.__file__).read(), m.__file__, 'exec'), {})",
])
def test_the_files_code_run_by_another_loader_or_an_exec_is_left_out(tmp_path, how):
    # functions made by that code would call nothing marked: what they run is not heard
    assert heard(tmp_path, f"m.used(1)\n{how}\n") == "left out"


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
    assert heard(tmp_path, forked.format(fork="calls.fork()")) == [USED, HELPER]
    assert heard(tmp_path, forked.format(fork="os.fork()")) is None


def test_in_a_gate_run_a_module_whose_asserts_pytest_rewrites_is_heard_and_keeps_the_rewriting(tmp_path):
    """A pytest plugin's package (fidelity's own, where this project's subjects live; here `plug`, given by
    -p) is rewritten by pytest for its asserts; marked here too, it keeps both: its units are heard and a
    failing assert says what pytest says of it."""
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "__init__.py").write_text("")
    (tmp_path / "plug" / "helpers.py").write_text("def check(x):\n    assert x == 2\n\n\ndef other():\n    return 0\n")
    (tmp_path / "test_it.py").write_text(textwrap.dedent('''
        import pytest

        from plug import helpers


        @pytest.mark.gate(equations=["toy.eq"], targets=["plug.helpers"])
        def test_it():
            helpers.check(3)
    '''))
    results = tmp_path / "results.json"
    run = subprocess.run([sys.executable, "-m", "pytest", "test_it.py", "-q", "-p", "no:cacheprovider", "-p", "plug",
                          "-p", "fidelity.perturb.pytest_plugin", "--fidelity-results", str(results),
                          "--fidelity-trace-calls"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    [item] = json.loads(results.read_text())["items"]
    assert "assert 3 == 2" in item["message"], item["message"]
    assert item["calls_so_far"] == {str(tmp_path / "plug" / "helpers.py"): [1]}
