"""`fidelity check` refuses what `fidelity perturb` refuses (issue 31): a gate listed under a perturbation
that survives it is RED in check though another perturbation turns it red, and a gate name the suite does
not have is RED in check as it is exit 2 in perturb. Both as a user meets them, in a `fidelity init` project."""
import json

from toy_project import fidelity

# Too weak for P1 (a dropped temperature leaves every row summing to 1), red under P3 (a sum over every
# entry makes each of the two rows sum to about a half).
WEAK_GATE = '''import pytest
import torch

from fidelity.gates.fixture_values import value


@pytest.mark.gate(equations=["mypaper.eq1"], mechanism="tempered_softmax")
def test_each_row_sums_to_one_at_temperature_two(subject, device):
    q = subject.get("tempered_softmax")(value("mypaper.rows_default", "logits", torch.float64, device), temperature=2.0)
    worst = float((q.sum(dim=-1) - 1).abs().max())
    assert worst <= 1e-12, f"a row of q sums to 1 within {worst:.3g}"
'''
WEAK = "tests/gates/test_row_sums.py::test_each_row_sums_to_one_at_temperature_two"
P1_LISTS = "      - tests/gates/test_tempered_softmax.py::test_softmax_at_temperature_two_matches_the_oracle\n"
TYPO = "tests/gates/test_tempered_softmax.py::test_with_no_temperature_given_each_row_is_the_ordinary_softmax"
P2_LISTS = f"      - {TYPO}_of_that_row\n"


def test_a_listed_gate_another_perturbation_accepts_and_a_misspelled_gate_each_turn_check_red(
        perturbed_init_project, tmp_path):
    root = perturbed_init_project.copy(tmp_path / "mypaper")
    (root / "tests" / "gates" / "test_row_sums.py").write_text(WEAK_GATE)
    spec = root / "specs" / "mypaper.yaml"
    text = spec.read_text()
    assert text.count(P1_LISTS) == 1 and text.index("id: P2") < text.index(P2_LISTS) < text.index("id: P3")
    spec.write_text(text.replace(P1_LISTS, P1_LISTS + f"      - {WEAK}\n"))

    perturb = fidelity("perturb", "P1", "P3", cwd=root)
    assert perturb.returncode == 1 and f"MISS P1: listed gate {WEAK} survived" in perturb.stdout, perturb.stdout

    spec.write_text(spec.read_text().replace(P2_LISTS, P2_LISTS + f"      - {TYPO}\n", 1))
    check = fidelity("check", "--json", cwd=root)
    report = json.loads(check.stdout)
    assert check.returncode == 1 and not report["ok"]
    weak_row = next(g for g in report["gates"] if g["gate"] == WEAK)
    assert weak_row["accepted"] and weak_row["accepted_by"] == ["P3"]  # accepted elsewhere, refused where listed
    (evidence,) = [s for s in report["stages"] if s["stage"] == "evidence"]
    assert not evidence["ok"]
    refused = {p["id"]: p["refused"] for p in report["perturbations"]}
    assert refused["P1"] == [{"gate": WEAK, "why": "survived"}]
    assert refused["P2"] == [{"gate": TYPO, "why": "unknown gate"}]
    assert f"perturbation P1 lists gate {WEAK}, whose current record under it reads survived" in evidence["problems"][0]
    assert any(p.startswith(f"perturbation P2 names gate {TYPO}, which the gate suite does not have")
               for p in evidence["problems"])
