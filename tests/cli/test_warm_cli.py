"""The tests' `python -m fidelity` in a fork of a warm process (tests/warm_cli.py) is what a fresh
interpreter is: the same output, exit code, import path, working directory, environment and arguments,
stdin empty, exit handlers run; a command with interpreter options runs fresh."""
from __future__ import annotations

import json
import os
import textwrap

import pytest

import warm_cli

PROBE = textwrap.dedent('''
    import atexit, json, os, sys
    atexit.register(lambda: print("exit handler ran"))
    print(json.dumps({"path": sys.path, "cwd": os.getcwd(), "argv": sys.argv, "name": __name__,
                      "only": os.environ.get("ONLY_HERE"), "stdin": sys.stdin.read(),
                      "optimized": sys.flags.optimize, "variables": sorted(os.environ),
                      "forked": "torch" in sys.modules}))  # the zygote's preload: a fresh probe imports no torch
    print("said on stderr", file=sys.stderr)
    if os.environ.get("RAISE"):
        raise RuntimeError("raised by the probe")
    if os.environ.get("CODE"):
        sys.exit(int(os.environ["CODE"]))
    ''')  # else it ends as a module does, with no SystemExit


@pytest.fixture
def probe_env(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "probe_module.py").write_text(PROBE)
    (tmp_path / "work").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in (warm_cli.FRESH_ENV, "HOME")}  # one the tests have
    env.update(PYTHONPATH=str(tmp_path / "lib"), ONLY_HERE="yes")
    return tmp_path / "work", env


def said(run) -> tuple[dict, list[str], bool]:
    """What the probe printed: its JSON line less where it ran, and the lines after it; and where it ran."""
    first, *rest = run.stdout.splitlines()
    data = json.loads(first)
    return {k: v for k, v in data.items() if k != "forked"}, rest, data["forked"]


def both(cwd, env, python_options=()):
    warm = warm_cli.python_m("probe_module", ["a", "b c"], cwd=cwd, env=env, timeout=120, python_options=python_options)
    os.environ[warm_cli.FRESH_ENV] = "1"
    try:
        fresh = warm_cli.python_m("probe_module", ["a", "b c"], cwd=cwd, env=env, timeout=120,
                                  python_options=python_options)
    finally:
        del os.environ[warm_cli.FRESH_ENV]
    return warm, fresh


@pytest.mark.parametrize("extra", [{}, {"CODE": "3"}, {"RAISE": "1"}], ids=["exit 0", "exit 3", "an exception"])
def test_a_command_in_the_fork_says_and_ends_as_in_a_fresh_interpreter(probe_env, extra):
    cwd, env = probe_env
    warm, fresh = both(cwd, {**env, **extra})
    (warm_said, warm_rest, forked), (fresh_said, fresh_rest, fresh_forked) = said(warm), said(fresh)
    assert forked and not fresh_forked  # else the two are one fresh run twice, and equal for nothing
    assert (warm.returncode, warm_said, warm_rest) == (fresh.returncode, fresh_said, fresh_rest)
    assert warm.stderr.splitlines()[0] == fresh.stderr.splitlines()[0] == "said on stderr"
    assert warm.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1]  # the exception's last line
    assert warm_said["argv"][1:] == ["a", "b c"] and warm_said["name"] == "__main__" and warm_said["stdin"] == ""
    assert warm_said["only"] == "yes" and warm_said["cwd"] == str(cwd)
    assert warm.stdout.splitlines()[-1] == "exit handler ran"
    assert warm.returncode == {"CODE": 3, "RAISE": 1}.get(next(iter(extra), None), 0)


def test_a_command_with_interpreter_options_runs_fresh(probe_env):
    cwd, env = probe_env
    warm, fresh = both(cwd, env, python_options=("-O",))
    assert json.loads(warm.stdout.splitlines()[0])["optimized"] == 1
    assert warm.stdout == fresh.stdout and not said(warm)[2]
