"""`fidelity init DIR` writes a project that is green out of the box, and whose gate sees a defect
in the scaffolded implementation by its own assertion."""
import json
import subprocess
import sys

import pytest


def fidelity(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "fidelity", *argv], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def scaffolded(perturbed_init_project, tmp_path_factory):
    """A copy of the run's one `fidelity init mypaper` + `fidelity perturb --all` (conftest's
    perturbed_init_project, which ran `fidelity check --json` in it next)."""
    return perturbed_init_project.copy(tmp_path_factory.mktemp("scratch") / "mypaper")


def test_perturb_all_then_check_is_green_in_the_new_project(perturbed_init_project):
    check = perturbed_init_project  # `fidelity check --json` right after `fidelity perturb --all`
    report = check.check_report
    assert check.check_returncode == 0 and report["ok"], check.check_stdout[-3000:]
    assert {s["stage"] for s in report["stages"]} == {"specs", "fixtures", "claims", "code", "gates", "evidence", "discovery"}
    assert [c["verdict"] for c in report["claims"]] == ["confirmed"]
    gates = {g["gate"].split("::", 1)[1]: g for g in report["gates"]}
    accepted_by = {name: g["accepted_by"] for name, g in gates.items()}
    generic = "TestTemperedSoftmaxGateClasses::"  # the one line of tests/gates/test_tempered_softmax_gate_classes.py
    assert accepted_by == {"test_softmax_at_temperature_two_matches_the_oracle": ["P1", "P6", "P7"],
                           "test_with_no_temperature_given_each_row_is_the_ordinary_softmax_of_that_row":
                               ["P2", "P3", "P6", "P7"],
                           "test_the_gradient_of_q1_is_the_oracles_at_temperature_two": ["P1", "P4", "P6", "P7"],
                           "test_a_temperature_that_is_not_positive_is_refused": ["P5"],  # P6 (a memo by shape): red only if a call of that shape ran before it in its child
                           generic + "test_defaults_as_shipped_are_the_interfaces_defaults": ["P2", "P6", "P7"],
                           generic + "test_dtype_device_outputs_keep_the_inputs_dtype_and_device": ["P6", "P7"],
                           generic + "test_gradient_reach_every_input_and_parameter": ["P4", "P6", "P7"],
                           generic + "test_gradients_finite_differences_through_every_input_and_parameter":
                               ["P4", "P6"],
                           generic + "test_refusals_as_documented": ["P5", "P6"],
                           generic + "test_stateless_a_call_leaves_no_state_behind": ["P6", "P7"]}
    assert all(g["status"] == "passed" for g in gates.values())
    assert gates["test_softmax_at_temperature_two_matches_the_oracle"]["subjects"]["mypaper"]["passed"] == 2  # f32, f64


def test_every_gate_class_that_applies_holds_the_new_projects_mechanism(perturbed_init_project):
    """The ledger's coverage table of the new project has no "missing" cell: the generic classes
    (tests/gates/test_tempered_softmax_gate_classes.py, one line) fill what its own gates do not."""
    from types import SimpleNamespace

    from fidelity.report.coverage import gather, missing

    gates = {g["gate"]: g for g in perturbed_init_project.check_report["gates"]}
    table = gather(gates, mechanisms={"tempered_softmax": SimpleNamespace(kind="function")}, gate_run=True)
    assert missing(table) == []


def test_discovery_finds_no_blind_spot_in_the_new_project(discovered_init_project):
    """The example is a model to copy: its gates leave no mutant of its implementation unexplained."""
    found = discovered_init_project  # `fidelity discover --module mypaper.softmax --json` in a copy of the project
    assert found.returncode == 0, found.stdout[-3000:] + found.stderr[-2000:]
    outcomes = {m["outcome"] for m in found.report["mutants"]}
    assert "killed" in outcomes and not outcomes & {"blind_spot", "undecided"}


def test_the_fixture_was_made_by_the_scaffolds_own_oracle(scaffolded):
    verify = fidelity("fixtures", "--verify", "--json", cwd=scaffolded)
    assert verify.returncode == 0 and json.loads(verify.stdout)["drifts"] == []
    stored = json.loads((scaffolded / "fixtures" / "mypaper.t2.json").read_text())
    assert stored["oracle"] == "mypaper.oracle.tempered_softmax"
    assert stored["expected"]["q"]["digits"][2].startswith("0.50648039105565402590")  # e^1.5 / (e^.5 + e + e^1.5)
    gradient = json.loads((scaffolded / "fixtures" / "mypaper.t2_gradient.json").read_text())["expected"]["gradient"]
    q1 = json.loads((scaffolded / "fixtures" / "mypaper.t2.json").read_text())["expected"]["q"]["float64"]
    # d q_1 / d z_j = q_1 (delta_1j - q_j) / T, by hand from the stored q at T = 2
    by_hand = [q1[0] * ((1.0 if j == 0 else 0.0) - q1[j]) / 2 for j in range(3)]
    assert all(abs(a - b) < 1e-15 for a, b in zip(gradient["float64"], by_hand)), (gradient["float64"], by_hand)


def test_breaking_the_implementation_turns_check_red_by_the_gates_assertion(scaffolded, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(scaffolded, broken)
    impl = broken / "mypaper" / "softmax.py"
    impl.write_text(impl.read_text().replace("z = logits / temperature", "z = logits * temperature"))
    check = fidelity("check", "--json", cwd=broken)
    report = json.loads(check.stdout)
    assert check.returncode == 1 and not report["ok"]
    [gate] = [g for g in report["gates"] if g["gate"].endswith("::test_softmax_at_temperature_two_matches_the_oracle")]
    assert gate["status"] == "failed"
    messages = [f["message"] for f in gate["failed"]]
    assert messages and all("q at T = 2" in m and "differ beyond" in m for m in messages)  # assert_close's words


def test_a_gate_class_nobody_defined_is_a_collection_error_that_names_it(scaffolded, tmp_path):
    import shutil

    typo = tmp_path / "typo"
    shutil.copytree(scaffolded, typo)
    gates = typo / "tests" / "gates" / "test_tempered_softmax.py"
    gates.write_text(gates.read_text().replace('gate_class="defaults_as_shipped"', 'gate_class="default_as_shiped"'))
    collect = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              "tests/gates"], capture_output=True, text=True, cwd=typo)
    assert collect.returncode != 0
    assert "gate_class 'default_as_shiped' is not one of" in collect.stdout + collect.stderr


def test_init_never_overwrites(scaffolded):
    before = {p: p.read_bytes() for p in scaffolded.rglob("*") if p.is_file()}
    again = fidelity("init", str(scaffolded), "--name", "mypaper", cwd=scaffolded.parent)
    assert again.returncode == 2 and "nothing written" in again.stderr
    assert {p: p.read_bytes() for p in scaffolded.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("name, says", [("torch", "already an importable module"), ("My-Paper", "lower-case")])
def test_a_name_that_cannot_be_used_is_refused_before_anything_is_written(tmp_path, name, says):
    proc = fidelity("init", "p", "--name", name, cwd=tmp_path)
    assert proc.returncode == 2 and says in proc.stderr
    assert not (tmp_path / "p").exists()
