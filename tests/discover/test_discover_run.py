"""`fidelity discover` on a toy project: each mutant killed by a gate, or decided by execution as
equivalent or a blind spot (with the input that tells it apart)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from fidelity import project
from fidelity.discover.run import discover

OPS = textwrap.dedent('''
    import torch


    def double(x):
        """2 x; the gate below holds it."""
        if x.dim() < 1:
            raise ValueError("x must have an axis")
        return x * 2.0


    def shrink(x, eps=1e-3):
        """No gate calls this: its default is a blind spot."""
        return x / (1.0 + eps)


    def halves(x):
        """Two independent assignments: swapping them changes nothing."""
        a = x * 0.5
        b = x / 2.0
        return a + b
''')

GATE = textwrap.dedent('''
    import pytest
    import torch


    @pytest.mark.gate(equations=["toy.eq1"], targets=["toydisc.ops"])
    def test_double_of_one_two_three():
        from toydisc.ops import double

        got = double(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
        assert torch.equal(got, torch.tensor([2.0, 4.0, 6.0], dtype=torch.float64)), got
''')


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toydisc")
    (root / "fidelity.toml").write_text('gates = "tests/gates"\n')
    (root / "toydisc").mkdir()
    (root / "toydisc" / "__init__.py").write_text("")
    (root / "toydisc" / "ops.py").write_text(OPS)
    (root / "tests" / "gates").mkdir(parents=True)
    (root / "tests" / "gates" / "test_ops.py").write_text(GATE)
    (root / "fixtures").mkdir()
    return root


@pytest.fixture(scope="module")
def found(toy):
    here = project.load(toy)
    saved = os.environ.get(project.ROOT_ENV)
    os.environ[project.ROOT_ENV] = str(toy)  # the runner's children learn their project from it
    try:
        result = discover("toydisc.ops", root=toy, test_paths=("tests/gates",), fixtures_dir=here.fixtures,
                          operators=["numeric_literal", "parameter_default", "guard_removed", "assignments_swapped",
                                     "detach_inserted"], jobs=2)
    finally:
        os.environ.pop(project.ROOT_ENV) if saved is None else os.environ.__setitem__(project.ROOT_ENV, saved)
    assert result.run_ok, result.run_error
    return {(m.function, m.operator, m.description): m for m in result.mutants}


def _one(found, function, operator, contains=""):
    hits = [m for (f, op, d), m in found.items() if f == function and op == operator and contains in d]
    assert hits, f"no {operator} mutant of {function} ({contains!r}); have {sorted(found)}"
    return hits[0]


def test_a_mutant_the_gate_sees_is_killed_and_names_the_gate(found):
    m = _one(found, "double", "numeric_literal", "2.0 -> 20.0")
    assert m.outcome == "killed"
    assert m.killed_by == ["tests/gates/test_ops.py::test_double_of_one_two_three"]
    assert m.equivalence is None  # a killed mutant needs no equivalence run


def test_a_default_no_gate_reaches_is_a_blind_spot_with_the_input_that_shows_it(found):
    m = _one(found, "shrink", "parameter_default", "eps")
    assert m.outcome == "blind_spot"
    witness = m.equivalence["witness"]
    assert witness["input"].startswith("shrink(") and witness["difference"] > 1e-9


def test_a_guard_removed_is_a_blind_spot_of_the_error_handling_contract(found):
    m = _one(found, "double", "guard_removed")
    assert m.outcome == "blind_spot"
    assert "original ValueError" in m.equivalence["witness"]["error"] and "mutant returns" in m.equivalence["witness"]["error"]


def test_swapping_independent_assignments_is_equivalent_on_every_probe_that_ran_it(found):
    m = _one(found, "halves", "assignments_swapped")
    assert m.outcome == "equivalent"
    assert m.equivalence["inputs"] and m.equivalence["max_difference"] <= 1e-9
    assert all(i.startswith("halves(") for i in m.equivalence["inputs"])  # only probes that executed the lines


def test_a_detach_is_told_apart_by_its_gradient(found):
    m = _one(found, "halves", "detach_inserted", "a")
    assert m.outcome == "blind_spot"


def test_the_cli_prints_the_table_and_the_json_shape(toy):
    env = {k: v for k, v in os.environ.items() if k != project.ROOT_ENV}
    proc = subprocess.run([sys.executable, "-m", "fidelity", "discover", "--module", "toydisc.ops",
                           "--operator", "parameter_default", "--json"], cwd=toy, capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]  # a blind spot: exit 1
    report = json.loads(proc.stdout)
    mutants = report["mutants"]
    assert mutants and all(m["function"] == "shrink" for m in mutants)  # the only parameter default in the file
    for mutant in mutants:
        assert {"id", "module", "operator", "line", "diff", "outcome", "killed_by", "equivalence"} <= set(mutant)
        assert mutant["outcome"] == "blind_spot" and mutant["equivalence"]["inputs"]
        assert mutant["diff"].startswith("--- a/toydisc/ops.py")
    assert report["modules"][0]["counts"]["parameter_default"]["blind_spot"] == len(mutants)
    text = subprocess.run([sys.executable, "-m", "fidelity", "discover", "--module", "toydisc.ops",
                           "--operator", "parameter_default"], cwd=toy, capture_output=True, text=True, env=env)
    assert "BLIND_SPOT" in text.stdout and "parameter_default" in text.stdout


def test_gates_already_red_on_a_package_are_set_aside_not_a_stopped_run(toy, tmp_path):
    """Someone else's package may fail gates unperturbed (its findings): discovery on it sets those
    gates aside and says so, while for our own subjects a red baseline still stops the run."""
    import shutil

    from fidelity.perturb import runner

    repo = tmp_path / "with_a_finding"
    shutil.copytree(toy, repo)
    (repo / "tests" / "gates" / "test_finding.py").write_text(textwrap.dedent('''
        import pytest


        @pytest.mark.gate(equations=["toy.eq2"], targets=["toydisc.ops"])
        def test_the_package_already_fails_this():
            assert False, "a finding about the package, before any mutant"
    '''))
    mutant = {"id": "m1", "title": "double doubles twice", "target": "toydisc.ops",
              "edits": [{"find": "return x * 2.0", "replace": "return x * 4.0"}], "gates": []}
    options = dict(repo_root=repo, test_paths=("tests/gates",), fixtures_dir=repo / "fixtures", jobs=2,
                   first_red_only=True, environment={project.ROOT_ENV: str(repo)})
    stopped = runner.observe([mutant], **options)
    assert stopped.error_kind == "baseline_red"
    aside = runner.observe([mutant], set_aside_red_baseline=True, **options)
    assert aside.error is None, aside.error
    assert aside.baseline["set_aside"] == ["tests/gates/test_finding.py::test_the_package_already_fails_this"]
    [seen] = aside.observed()
    assert [g["gate"] for g in seen["red_by_assertion"]] == ["tests/gates/test_ops.py::test_double_of_one_two_three"]
