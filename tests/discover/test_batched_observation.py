"""The discovery fast path sees what an ordinary child sees: a batch child (collect once, fork per
mutant, code swapped in place) and one fresh child per mutant give every mutant the same outcome;
a mutant the swap cannot serve runs alone; a mutant no gate instance executes runs nowhere."""
import textwrap

import pytest

from fidelity import project
from fidelity.perturb import runner

OPS = textwrap.dedent('''
    import torch

    OFFSET = 0.0


    def double(x):
        if x.dim() < 1:
            raise ValueError("x must have an axis")
        return x * 2.0 + OFFSET


    def untested(x):
        return x - 1.0
''')

GATES = textwrap.dedent('''
    import pytest
    import torch

    from toybatch.ops import double  # imported at collection: the batch forks swap its code


    @pytest.mark.gate(equations=["toy.eq1"], targets=["toybatch.ops"])
    def test_double_of_one_two_three():
        got = double(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
        assert torch.equal(got, torch.tensor([2.0, 4.0, 6.0], dtype=torch.float64)), got


    @pytest.mark.gate(equations=["toy.eq2"], targets=["toybatch.ops"])
    def test_double_of_a_matrix_keeps_its_shape():
        assert double(torch.ones(2, 3, dtype=torch.float64)).shape == (2, 3)
''')

MUTANTS = [
    ("times_three", "return x * 2.0 + OFFSET", "return x * 3.0 + OFFSET", {"lines": [10, 10]}),
    ("shape_lost", "return x * 2.0 + OFFSET", "return (x * 2.0 + OFFSET).sum()", {"lines": [10, 10]}),
    ("guard_gone", "if x.dim() < 1:", "if False:", {"lines": [8, 8]}),
    ("crash", "return x * 2.0 + OFFSET", "return x.no_such_method()", {"lines": [10, 10]}),
    ("constant", "OFFSET = 0.0", "OFFSET = 1.0", None),           # a module value: the swap refuses it
    ("never_run", "return x - 1.0", "return x - 2.0", {"lines": [14, 14]}),  # no gate calls untested()
]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toybatch")
    (root / "fidelity.toml").write_text('gates = "tests/gates"\n')
    (root / "toybatch").mkdir()
    (root / "toybatch" / "__init__.py").write_text("")
    (root / "toybatch" / "ops.py").write_text(OPS)
    (root / "tests" / "gates").mkdir(parents=True)
    (root / "tests" / "gates" / "test_ops.py").write_text(GATES)
    (root / "fixtures").mkdir()
    return root


def _observe(toy, **how):
    perturbations = [{"id": pid, "title": pid, "target": "toybatch.ops", "gates": [], "reach": reach,
                      "edits": [{"find": find, "replace": replace}]} for pid, find, replace, reach in MUTANTS]
    run = runner.observe(perturbations, repo_root=toy, test_paths=("tests/gates",), fixtures_dir=toy / "fixtures",
                         jobs=2, first_red_only=True, environment={project.ROOT_ENV: str(toy)}, **how)
    assert run.error is None, run.error
    return {p.id: p for p in run.perturbations}


def _outcome(p) -> str:
    seen = p.observation()
    if seen["unreached"]:
        return "unreached"
    return "killed" if seen["red_by_assertion"] else "error" if seen["red_other"] else "survived"


@pytest.fixture(scope="module")
def both(toy):
    return _observe(toy, trace_lines=True, batched=True), _observe(toy)


def test_batched_and_one_child_each_agree_on_every_reached_mutant(both):
    batched, alone = both
    assert {pid: _outcome(p) for pid, p in batched.items() if pid != "never_run"} == \
           {pid: _outcome(p) for pid, p in alone.items() if pid != "never_run"}
    assert _outcome(batched["times_three"]) == "killed" and _outcome(batched["crash"]) == "error"
    assert _outcome(batched["guard_gone"]) == "survived" and _outcome(batched["constant"]) == "killed"


def test_mutants_are_served_by_code_swap_in_forks_of_a_batch_child(both):
    batched, _ = both
    assert {p.child["start"] for pid, p in batched.items() if pid not in ("constant", "never_run")} == {"batch"}


def test_a_mutant_the_swap_cannot_serve_runs_in_a_child_of_its_own(both):
    batched, _ = both
    assert batched["constant"].child["start"] in ("warm", "cold")
    assert batched["constant"].child["patch_served"] == 1


def test_a_mutant_no_gate_instance_executes_is_run_by_none(both):
    batched, alone = both
    assert batched["never_run"].unreached and batched["never_run"].child is None and not batched["never_run"].gates
    assert _outcome(alone["never_run"]) == "survived"  # without tracing it ran every gate, to no effect


def test_a_mutant_runs_only_the_instances_that_execute_its_lines(both, toy):
    batched, _ = both
    assert len(batched["times_three"].gates) == 2
    assert batched["guard_gone"].gates == ["tests/gates/test_ops.py::test_double_of_a_matrix_keeps_its_shape",
                                           "tests/gates/test_ops.py::test_double_of_one_two_three"]
