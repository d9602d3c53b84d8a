"""The same catalogue run twice writes the same evidence: a patched child's global generators are
seeded (a defect that draws random numbers reads the same in every run, on any executor), an
unpatched child's are not (a gate that reads them is still refused as flaky), and no record keeps a
memory address (they change in every process) nor the folder a package is installed in (it changes
between machines and venvs)."""
from __future__ import annotations

import os

from fidelity.evidence.outcome import Outcome
from fidelity.perturb.machine_neutral import shown_path, without_addresses

from .conftest import make_toy_repo

DICE = "tests/toygate_dice.py"
HALF = f"{DICE}::test_roll_is_one_half"
RANDOM_DEFECT = {"id": "P_random", "title": "roll draws from the global generator", "target": "toysubj.dice",
                 "edits": [{"find": "    return 0.5", "replace": "    import random\n    return random.random()"}],
                 "gates": [HALF]}


def _reading_of_one_run(tmp_path, name):
    """The red reading of one run (an observation: its perturbation child is patched as a run's is,
    after two clean runs instead of ten)."""
    from fidelity.perturb import observe

    repo = make_toy_repo(tmp_path / name)
    result = observe([RANDOM_DEFECT], test_paths=[f"{DICE}::test_roll_is_one_half"], repo_root=repo,
                     reports_dir="reports", jobs=2, timeout_s=60)
    assert result.ok, result.error
    [outcome] = result.perturbations[0].outcomes
    assert outcome.outcome == Outcome.RED_BY_ASSERTION
    return outcome.reading


def test_a_defect_that_draws_random_numbers_reads_the_same_in_every_run(tmp_path):
    first = _reading_of_one_run(tmp_path, "one")
    assert 0.0 < first < 1.0
    assert _reading_of_one_run(tmp_path, "two") == first


def test_a_gate_reading_the_unseeded_generator_is_still_refused_as_flaky(tmp_path):
    from fidelity.perturb import observe

    repo = make_toy_repo(tmp_path / "repo")  # two unpatched runs are enough to tell readings apart
    result = observe([dict(RANDOM_DEFECT, gates=[])], test_paths=[DICE], repo_root=repo, reports_dir="reports",
                     jobs=2, timeout_s=60)
    assert result.error_kind == "flaky"
    assert list(result.baseline["flaky"]) == [f"{DICE}::test_reading_from_the_global_generator"]


def test_a_message_keeps_no_memory_address():
    pytest_says = ("assert False\n +  where False = <built-in method equal of type object at 0x7f3ec06cea40>"
                   "(tensor([0.5]), tensor([1.]))")
    assert without_addresses(pytest_says) == ("assert False\n +  where False = <built-in method equal of type object "
                                              "at 0x..>(tensor([0.5]), tensor([1.]))")
    assert without_addresses("got 0x10 at index 3") == "got 0x10 at index 3"


def test_a_file_of_an_installed_package_is_named_as_imported_even_from_a_venv_inside_the_project(tmp_path):
    import sysconfig

    import torch.nn.functional

    site = sysconfig.get_paths()["purelib"]
    venv_inside = os.path.join(os.path.dirname(site), "")  # a project holding the venv, as a checkout's .venv
    for rootdir in (str(tmp_path) + os.sep, venv_inside):
        assert shown_path(torch.nn.functional.__file__, rootdir) == "torch/nn/functional.py"
    assert shown_path(str(tmp_path / "tests" / "g.py"), str(tmp_path) + os.sep) == "tests/g.py"
    assert shown_path("/venv/lib/site/pkg/mod.py", None, ["/venv/lib", "/venv/lib/site"]) == "pkg/mod.py"  # deepest
    assert shown_path("/venv/lib/sitex/mod.py", None, ["/venv/lib/site"]) == "/venv/lib/sitex/mod.py"  # not a prefix
    assert shown_path("/elsewhere/mod.py", "/project/", ["/venv/lib/site"]) == "/elsewhere/mod.py"
