"""The marked code of a module is compiled once and read back by the next process, never where anything it
depends on moved: the file's bytes, its real path (the markers name it), the marking itself; and it is kept
only where Python itself would keep bytecode.
Each case imports the module in fresh interpreters, as a run's children do."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

MODULE = "def used(x):\n    return helper(x) + 1\n\n\ndef helper(x):\n    return x\n\n\ndef never():\n    return 0\n"

SCRIPT = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, FOLDER)
    from fidelity.perturb import calls_so_far
    compiled = []
    made = calls_so_far._marked_code
    calls_so_far._marked_code = lambda *a: compiled.append(a[1]) or made(*a)
    calls = calls_so_far.CallsSoFar([FOLDER + "/m.py"])
    calls.start()
    import m
    m.used(1)
    print(json.dumps({"heard": calls.seen(), "compiled": len(compiled)}))
''')


def imported(folder, write_bytecode: bool = True) -> dict:
    """{"heard": seen() after m.used(1), "compiled": how many times the marked code was compiled here}."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    run = subprocess.run([sys.executable, "-c", SCRIPT.replace("FOLDER", repr(str(folder)))], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def kept(folder):
    return sorted(p.name for p in (folder / "__pycache__").glob("m.*.fidelity-marked.pyc"))


def test_the_next_process_reads_the_marked_code_back_and_hears_the_same(tmp_path):
    (tmp_path / "m.py").write_text(MODULE)
    first = imported(tmp_path)
    assert first == {"heard": {str(tmp_path / "m.py"): [1, 5]}, "compiled": 1} and len(kept(tmp_path)) == 1
    assert imported(tmp_path) == {**first, "compiled": 0}


def test_an_edit_is_compiled_again_and_heard_at_its_new_lines(tmp_path):
    (tmp_path / "m.py").write_text(MODULE)
    imported(tmp_path)
    (tmp_path / "m.py").write_text("\n\n" + MODULE)  # the same size of cached file, other def lines
    assert imported(tmp_path) == {"heard": {str(tmp_path / "m.py"): [3, 7]}, "compiled": 1}


def test_a_copy_with_its_cache_is_heard_under_its_own_path(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "m.py").write_text(MODULE)
    imported(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # __pycache__ too, as a copy of a project brings it
    assert imported(tmp_path / "b") == {"heard": {str(tmp_path / "b" / "m.py"): [1, 5]}, "compiled": 1}


def test_the_same_file_imported_by_another_name_has_that_name_in_its_code(tmp_path):
    # a traceback names the file as it was imported, as Python's own bytecode does
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "m.py").write_text(MODULE)
    (tmp_path / "linked").symlink_to(tmp_path / "a")
    imported(tmp_path / "a")
    script = SCRIPT.replace("FOLDER", repr(str(tmp_path / "linked"))) + "print(m.used.__code__.co_filename)\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == str(tmp_path / "linked" / "m.py")


def test_a_damaged_cache_is_compiled_again(tmp_path):
    (tmp_path / "m.py").write_text(MODULE)
    imported(tmp_path)
    [name] = kept(tmp_path)
    cached = tmp_path / "__pycache__" / name
    cached.write_bytes(cached.read_bytes()[:-7])
    assert imported(tmp_path) == {"heard": {str(tmp_path / "m.py"): [1, 5]}, "compiled": 1}


def test_with_bytecode_writing_off_nothing_is_kept(tmp_path):
    (tmp_path / "m.py").write_text(MODULE)
    assert imported(tmp_path, write_bytecode=False)["compiled"] == 1
    assert not list(tmp_path.glob("__pycache__/*.fidelity-marked.pyc"))
    assert imported(tmp_path, write_bytecode=False)["compiled"] == 1


def test_an_edit_to_the_marking_itself_compiles_every_module_again(monkeypatch):
    from fidelity import function_meaning
    from fidelity.perturb import calls_so_far

    before = calls_so_far._marking()
    calls_so_far._marking.cache_clear()
    real_open = open
    monkeypatch.setattr(calls_so_far, "open", lambda file, mode="r": _with_a_comment(real_open(file, mode))
                        if file == function_meaning.__file__ else real_open(file, mode), raising=False)
    try:
        assert calls_so_far._marking() != before
    finally:
        calls_so_far._marking.cache_clear()


class _with_a_comment:
    """A binary file whose bytes read with a comment added at the end."""

    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def read(self):
        return self.f.read() + b"# an edit\n"
