"""fidelity's gate plugins turn a NotRun raised by a subject into a skip that says why, leave any other
NotImplementedError red, and make a project whose gates never touch torch import no torch."""
import json
import subprocess
import sys
import textwrap


GATES = textwrap.dedent('''
    def test_refused():
        from fidelity.mechanisms import NotRun
        raise NotRun("float64 is outside the declared capability")

    def test_refused_by_a_subclass():
        from fidelity.mechanisms import NotRun

        class Declined(NotRun):
            pass
        raise Declined("no cuda here")

    def test_torch_lacks_an_op():
        raise NotImplementedError("aten::foo is not implemented for this device")

    def test_plain():
        assert 1 + 1 == 2
''')


def _run(folder, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfs", *args],
                          cwd=folder, capture_output=True, text=True)


def test_a_not_run_is_skipped_with_its_reason_and_a_bare_not_implemented_error_is_red(tmp_path):
    (tmp_path / "test_gates.py").write_text(GATES)
    out = _run(tmp_path)
    assert out.returncode == 1, out.stdout[-2000:]
    assert ": not run: float64 is outside the declared capability" in out.stdout
    assert ": not run: no cuda here" in out.stdout
    assert "FAILED test_gates.py::test_torch_lacks_an_op - NotImplementedError" in out.stdout
    assert "1 failed, 1 passed, 2 skipped" in out.stdout


def test_gates_that_never_touch_torch_run_and_are_recorded_without_importing_it(tmp_path):
    """As a runner child runs them (run mode, results written): no subject was used, so none is described."""
    (tmp_path / "test_arith.py").write_text("def test_add():\n    assert 1 + 2 == 3\n")
    (tmp_path / "conftest.py").write_text(textwrap.dedent('''
        import json, sys

        def pytest_unconfigure(config):  # after every plugin's session finish
            with open("imported.json", "w") as f:
                json.dump(sorted(m for m in ("torch", "sympy", "numpy") if m in sys.modules), f)
    '''))
    out = _run(tmp_path, "-p", "fidelity.perturb.pytest_plugin", "--fidelity-mode", "run",
               "--fidelity-results", "results.json")
    assert out.returncode == 0, out.stdout[-2000:]
    assert json.loads((tmp_path / "imported.json").read_text()) == []
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["subjects"] == [] and [i["outcome"] for i in results["items"]] == ["passed"]
