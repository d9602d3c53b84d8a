"""Issue 50: a gate marker naming a mechanism nobody declares (`mechanism="rmsnrom"`) skipped every
instance ("no subject provides ...") and `check` said "0 gates red". Now a mechanism, gate class or
equation that nobody declares is a collection error naming the gate, the unknown name and the closest
declared names, and `fidelity check` is RED naming it; and check's text says why instances did not run.

Each typo is in a gate file of its own, in a project `fidelity init` writes: a collection error is the
whole file's, so one file per typo shows that each is reported."""
import re
import subprocess
import sys

import pytest

from tests.toy_project import fidelity, init_project

GATE = '''
import pytest


@pytest.mark.gate(equations=["{equation}"], mechanism="{mechanism}"{gate_class})
def test_typo(subject, device):
    assert subject.get("tempered_softmax") is not None
'''
TYPOS = {  # file -> (marker fields, the unknown name, the closest declared name the error must offer)
    "test_typo_mechanism.py": (dict(mechanism="tempered_sofmax"), "'tempered_sofmax'", "tempered_softmax"),
    "test_typo_gate_class.py": (dict(gate_class="gradient_rech"), "'gradient_rech'", "gradient_reach"),
    "test_typo_equation.py": (dict(equation="mypaper.eq11"), "'mypaper.eq11'", "mypaper.eq1"),
}


def _write_typos(root, files=TYPOS):
    for name, (fields, _, _) in files.items():
        fields = {"equation": "mypaper.eq1", "mechanism": "tempered_softmax", **fields}
        gate_class = f', gate_class="{fields["gate_class"]}"' if "gate_class" in fields else ""
        (root / "tests" / "gates" / name).write_text(GATE.format(equation=fields["equation"],
                                                                 mechanism=fields["mechanism"], gate_class=gate_class))


@pytest.fixture(scope="module")
def typo_project(tmp_path_factory):
    root = init_project(tmp_path_factory.mktemp("typos"))
    _write_typos(root)
    return root


def test_each_unknown_name_is_a_collection_error_naming_the_gate_the_name_and_the_closest_declared(typo_project):
    out = subprocess.run([sys.executable, "-m", "pytest", "tests/gates", "--collect-only", "-q",
                          "-p", "no:cacheprovider"], cwd=typo_project, capture_output=True, text=True)
    assert out.returncode != 0, out.stdout[-3000:]
    assert "3 errors" in out.stdout, out.stdout[-3000:]
    for name, (_, unknown, closest) in TYPOS.items():
        [line] = [ln for ln in out.stdout.splitlines() if ln.startswith("E ") and unknown in ln]
        assert f"tests/gates/{name}::test_typo" in line, line
        assert re.search(rf"closest[^:]*: [^;]*\b{re.escape(closest)}\b", line), line
    # the project's own gates still collect
    assert "test_tempered_softmax.py::test_softmax_at_temperature_two_matches_the_oracle" in out.stdout


@pytest.fixture(scope="module")
def checked(typo_project):
    return fidelity("check", cwd=typo_project)


def test_check_is_red_naming_each_unknown_name_and_where(checked):
    """... and the gate files that did collect still run (as on every number of processes)."""
    assert checked.returncode == 1, checked.stdout[-3000:]
    gates_red = [ln for ln in checked.stdout.splitlines() if ln.startswith("gates     RED")]
    for name, (_, unknown, closest) in TYPOS.items():
        assert any(f"tests/gates/{name}::test_typo" in ln and unknown in ln and closest in ln
                   for ln in gates_red), "\n".join(gates_red)


def test_check_says_why_instances_did_not_run(checked):
    """The init project's subject declares cuda; this machine's CUDA (or its absence) decides. Either
    way the text gives each reason with its count, as the JSON does."""
    lines = checked.stdout.splitlines()
    [summary] = [ln for ln in lines if ln.startswith("gates     ") and " instances: " in ln]
    not_run = int(re.search(r"(\d+) instances not run", summary).group(1))
    if not not_run:
        import torch

        # without CUDA the subject's cuda instances cannot run: none "not run" means the gates did not run at all
        assert torch.cuda.is_available(), f"no CUDA device here, yet no instance was not run: {summary}"
        pytest.skip("every instance ran on this machine (a CUDA device): nothing to give a reason for")
    reasons = [ln for ln in lines if ln.startswith("gates     not run: ")]
    assert reasons, checked.stdout[-3000:]
    counted = sum(int(re.match(r"gates     not run: (?:and \d+ more reasons? for )?(\d+) ", ln).group(1))
                  for ln in reasons)
    assert counted == not_run, (summary, reasons)
    assert any("no CUDA device" in ln for ln in reasons), reasons


@pytest.mark.parametrize("typo", ["test_typo_mechanism.py", "test_typo_equation.py"])
def test_check_subject_fails_saying_which_gate_names_what(tmp_path, typo):
    """The subject's run selects the gate files naming its mechanisms: the misspelled mechanism's file is
    run too (else it would drop out in silence), and a file that does not collect stops the verdict."""
    root = init_project(tmp_path)
    _write_typos(root, {typo: TYPOS[typo]})
    out = fidelity("check", "--subject", "mypaper", cwd=root)
    _, unknown, closest = TYPOS[typo]
    assert out.returncode == 1, (out.stdout[-2000:], out.stderr[-2000:])
    [line] = [ln for ln in out.stderr.splitlines() if ln.startswith("fidelity check: error:")]
    assert f"tests/gates/{typo}::test_typo" in line and unknown in line and closest in line, line
