"""The generic gate classes (fidelity.gates.library) hold a project's own mechanisms, function and module, from
one line each: green on a faithful subject, and each class red by its own assertion on the defect it names.

One `fidelity init` project gets a module mechanism (an RMS norm with a gain) beside the scaffold's
function, and one subject per defect; the gate file is the two one-line classes a user writes.
"""
import xml.etree.ElementTree as ET
import subprocess
import sys

import pytest

from toy_project import init_project
from library import toy_mechanisms as toy

RED = {  # subject -> the generic gates that must be red on it, by (class, gate class)
    "memo": {("TestSoftmax", "stateless"), ("TestNorm", "stateless")},
    "cast": {("TestSoftmax", "dtype_device")},
    "other_default": {("TestSoftmax", "defaults_as_shipped"), ("TestNorm", "defaults_as_shipped")},
    "detached": {("TestSoftmax", "gradient_reach"), ("TestSoftmax", "gradients_finite_differences"),
                 ("TestSoftmax", "gradients_from_oracle"), ("TestNorm", "gradient_reach"),
                 ("TestNorm", "parameters_alive"), ("TestNorm", "gradients_from_oracle")},
    "no_guard": {("TestSoftmax", "refusals"), ("TestNorm", "refusals")},
    "eval_path": {("TestNorm", "train_eval")},
    "zero_init": {("TestNorm", "init_through_module")},
    "drops_dtype": {("TestNorm", "dtype_device")},  # float32 weights: the float64 output alone would not tell
}
CLASS_OF_TEST = {"test_stateless": "stateless", "test_dtype_device": "dtype_device", "test_train_eval": "train_eval",
                 "test_defaults_as_shipped": "defaults_as_shipped", "test_gradients_finite": "gradients_finite_differences",
                 "test_gradients_from_oracle": "gradients_from_oracle",
                 "test_gradient_reach": "gradient_reach", "test_parameters_alive": "parameters_alive",
                 "test_refusals": "refusals", "test_init_through_module": "init_through_module"}


def _gate_class(test_name: str) -> str:
    return next(c for prefix, c in CLASS_OF_TEST.items() if test_name.startswith(prefix))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """(subject, test class, gate class) -> ["passed" | "failed: message" | "skipped"] over the dtypes."""
    root = init_project(tmp_path_factory.mktemp("library"))
    package = root / "mypaper"
    for name, text in (("norm_mechanism", toy.NORM_MECHANISM), ("norm", toy.NORM), ("softmaxes", toy.SOFTMAXES),
                       ("subjects", toy.SUBJECTS)):
        (package / f"{name}.py").write_text(text, encoding="utf-8")
    (package / "oracle.py").write_text((package / "oracle.py").read_text() + toy.NORM_FIXTURE, encoding="utf-8")
    (root / "tests" / "gates" / "test_generic.py").write_text(toy.GATES, encoding="utf-8")
    subjects = ", ".join(f'"mypaper.subjects:{s}"' for s in ("FAITHFUL", *(k.upper() for k in RED)))
    pyproject = (root / "pyproject.toml").read_text()
    pyproject = pyproject.replace('subjects = ["mypaper.subject:SUBJECT"]', f"subjects = [{subjects}]")
    pyproject = pyproject.replace('mechanisms = ["mypaper.mechanism:MECHANISM"]',
                                  'mechanisms = ["mypaper.mechanism:MECHANISM", "mypaper.norm_mechanism:MECHANISM"]')
    (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    regen = subprocess.run([sys.executable, "-m", "fidelity", "fixtures", "--regen"], cwd=root, capture_output=True,
                           text=True)
    assert regen.returncode == 0, regen.stdout + regen.stderr
    xml = root / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "tests/gates/test_generic.py", "-q", "-p", "no:randomly",
                    "-p", "no:cacheprovider", f"--junitxml={xml}"], cwd=root, capture_output=True, text=True)
    found: dict[tuple[str, str, str], list[str]] = {}
    for case in ET.parse(xml).iter("testcase"):
        test, params = case.get("name").split("[", 1)
        subject, device = params.split("-")[:2]
        if device != "cpu":
            continue  # the toy subjects declare cpu alone: their cuda instances are not run
        failure = case.find("failure")
        outcome = ("failed: " + failure.get("message", "") if failure is not None
                   else "skipped" if case.find("skipped") is not None else "passed")
        found.setdefault((subject, case.get("classname").rsplit(".", 1)[-1], _gate_class(test)), []).append(outcome)
    return found


def test_a_faithful_function_and_module_pass_every_generic_class_that_applies(outcomes):
    faithful = {key: o for key, o in outcomes.items() if key[0] == "faithful" and key[1] != "TestNormGainLeftOut"}
    assert {(k[1], k[2]) for k in faithful} == {
        ("TestSoftmax", c) for c in ("stateless", "dtype_device", "defaults_as_shipped", "gradients_finite_differences",
                                     "gradient_reach", "gradients_from_oracle", "refusals")} | {
        ("TestNorm", c) for c in ("stateless", "dtype_device", "train_eval", "defaults_as_shipped",
                                  "gradients_finite_differences", "gradient_reach", "gradients_from_oracle",
                                  "init_through_module", "parameters_alive", "refusals")}
    assert all(o == ["passed"] * len(o) for o in faithful.values()), faithful


@pytest.mark.parametrize("subject", sorted(RED))
def test_each_class_is_red_by_its_own_assertion_on_the_defect_it_names(outcomes, subject):
    for test_class, gate_class in sorted(RED[subject]):
        got = outcomes[(subject, test_class, gate_class)]
        assert any(o.startswith("failed:") for o in got), (subject, test_class, gate_class, got)
        own = ("failed: fidelity.gates.compare.GateFailure", "failed: fidelity.gates.output_contract.OutputContract")
        assert all(o.startswith(own) for o in got if o.startswith("failed:")), got  # the gate's own assertion


def test_an_oracle_gradient_fixture_that_leaves_a_parameter_out_is_an_error_naming_it(outcomes):
    got = outcomes[("faithful", "TestNormGainLeftOut", "gradients_from_oracle")]
    assert got and all(o.startswith("failed: ValueError") and "it gives none for weight" in o for o in got), got
