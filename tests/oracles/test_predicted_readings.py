"""The specs' predicted readings, recomputed from the fixtures their structured `oracle:` names."""
import json
import shutil
from pathlib import Path

import pytest

from fidelity import project
from fidelity.oracles import predicted_readings as prr
from fidelity.spec.errors import SpecError
from fidelity.spec.loader import load_catalogue

P1_GATE = "tests/gates/test_mhc_eq3.py::test_eq3_sliced_layout_on_the_hand_computed_fixture"
P1_ORACLE = "oracle: {fixture: mhc.eq3_sliced, prediction: mhc.eq3.sigma_post, fields: [out], measure: worst_relative_error}"


@pytest.fixture(scope="module")
def proj():
    return project.current()


@pytest.fixture(scope="module")
def catalogue(proj):
    return load_catalogue(proj.specs)


def _copy_specs(proj, tmp_path: Path) -> Path:
    specs = tmp_path / "specs"
    shutil.copytree(proj.specs, specs)
    return specs


def _edit(file: Path, old: str, new: str) -> int:
    """Replace the one line holding `old`; return its 1-based line number."""
    lines = file.read_text(encoding="utf-8").split("\n")
    hits = [i for i, line in enumerate(lines) if old in line]
    assert len(hits) == 1, f"{old!r} occurs {len(hits)} times in {file}"
    lines[hits[0]] = lines[hits[0]].replace(old, new)
    file.write_text("\n".join(lines), encoding="utf-8")
    return hits[0] + 1


def test_every_spec_prediction_verifies(catalogue, proj):
    entries = [(p.id, e) for p in catalogue.perturbations.values() for e in p.get("predicted") or []]
    assert len(entries) >= 21
    assert all(isinstance(e["oracle"], dict) for _, e in entries)
    assert prr.verify(catalogue, proj.fixtures) == []


def test_the_computed_values_are_the_gates_readings(proj):
    """Two by hand: P1's out[1, 0] (27.12723429 for 51.65446857) and P5's floor-1 distance at T = 8."""
    got = prr.compute({"fixture": "mhc.eq3_sliced", "prediction": "mhc.eq3.sigma_post", "fields": ["out"],
                       "measure": "worst_relative_error"}, proj.fixtures)
    assert abs(float(got) - (51.65446857 - 27.12723429) / 51.65446857) < 1e-8
    composite = {"fixture": "mhc.composite_perturbed", "prediction": "mhc.composite.n2.not_unrolled",
                 "fields": ["n2.distance"], "measure": "worst_relative_error"}
    with_floor = prr.compute(dict(composite, floor=1.0), proj.fixtures)
    assert abs(float(with_floor) - 0.648409169591) < 1e-11
    assert float(prr.compute(composite, proj.fixtures)) > 5  # relative to |lambda2|^8 = 0.11: the floor matters
    on = prr.compute({"fixture": "sinkhorn.cross_ratio_2x2", "prediction": "sinkhorn.cross_ratio_2x2.row_first",
                      "fields": ["trajectory"], "index": 1, "measure": "on_prediction"}, proj.fixtures)
    assert on == 0


def test_a_changed_reading_is_reported_with_file_line_and_both_values(proj, tmp_path):
    specs = _copy_specs(proj, tmp_path)
    line = _edit(specs / "mhc.yaml", "reading: 0.474832767891", "reading: 0.474832767892")
    problems = prr.verify(load_catalogue(specs), proj.fixtures)
    assert len(problems) == 1, [str(p) for p in problems]
    p = problems[0]
    assert (p.file.name, p.line, p.perturbation, p.gate) == ("mhc.yaml", line, "P1", P1_GATE)
    assert (p.spec, p.computed) == (0.474832767892, 0.474832767891)
    assert f"mhc.yaml:{line}" in str(p) and "0.474832767892" in str(p) and "0.474832767891" in str(p)
    assert p.to_json()["stored"] == 0.474832767892


def test_an_on_prediction_reading_other_than_zero_is_reported(proj, tmp_path):
    specs = _copy_specs(proj, tmp_path)
    text = (specs / "mhc.yaml").read_text(encoding="utf-8")
    marker = "oracle: {fixture: mhc.eq3_sliced, prediction: mhc.eq3.sigma_post, fields: [out], measure: on_prediction}"
    assert text.count("reading: 0.0\n        " + marker) == 1
    (specs / "mhc.yaml").write_text(text.replace("reading: 0.0\n        " + marker, "reading: 12.5\n        " + marker))
    problems = prr.verify(load_catalogue(specs), proj.fixtures)
    assert [(p.perturbation, p.spec, p.computed) for p in problems] == [("P1", 12.5, 0.0)]


@pytest.mark.parametrize("old, new, words", [
    ("prediction: mhc.eq3.sigma_post, fields: [out], measure: worst",
     "prediction: mhc.eq3.no_such_defect, fields: [out], measure: worst", "no prediction 'mhc.eq3.no_such_defect'"),
    ("fixture: mhc.eq3_sliced, prediction: mhc.eq3.sigma_post, fields: [out], measure: worst",
     "fixture: mhc.no_such_fixture, prediction: mhc.eq3.sigma_post, fields: [out], measure: worst",
     "unknown fixture 'mhc.no_such_fixture'"),
    ("prediction: mhc.eq3.sigma_post, fields: [out], measure: worst",
     "prediction: mhc.eq3.sigma_post, fields: [H_res], measure: worst", "is about 'out', not 'H_res'"),
    ("prediction: mhc.eq3.sigma_post, fields: [out], measure: worst",
     "prediction: mhc.eq3.sigma_post, fields: [out.nope], measure: worst", "no 'nope'"),
])
def test_an_unknown_fixture_prediction_or_field_is_a_problem_not_a_skip(proj, tmp_path, old, new, words):
    specs = _copy_specs(proj, tmp_path)
    line = _edit(specs / "mhc.yaml", P1_ORACLE, P1_ORACLE.replace(old, new))
    problems = prr.verify(load_catalogue(specs), proj.fixtures)
    assert len(problems) == 1, [str(p) for p in problems]
    assert problems[0].perturbation == "P1" and words in problems[0].message
    assert problems[0].line == line - 1  # the reading's line, just above its oracle


def test_a_stale_fixture_prediction_is_reported(proj, catalogue, tmp_path):
    fixtures = tmp_path / "fixtures"
    shutil.copytree(proj.fixtures, fixtures)
    path = fixtures / "mhc.eq3_sliced.json"
    fx = json.loads(path.read_text())
    fx["predictions"]["mhc.eq3.sigma_post"]["digits"][1][0] = "30.0"
    path.write_text(json.dumps(fx))
    problems = prr.verify(catalogue, fixtures)
    assert [(p.perturbation, p.gate) for p in problems] == [("P1", P1_GATE)]


@pytest.mark.parametrize("new", [
    "oracle: mhc.eq3.sigma_post",
    "oracle: {fixture: mhc.eq3_sliced, prediction: mhc.eq3.sigma_post, fields: [out], measure: by_eye}",
    "oracle: {fixture: mhc.eq3_sliced, prediction: mhc.eq3.sigma_post, measure: worst_relative_error}",
    "oracle: {fixture: mhc.eq3_sliced, prediction: mhc.eq3.sigma_post, fields: [out], "
    "measure: worst_relative_error, note: free text}",
])
def test_a_free_text_or_malformed_oracle_is_refused_by_the_schema(proj, tmp_path, new):
    specs = _copy_specs(proj, tmp_path)
    line = _edit(specs / "mhc.yaml", P1_ORACLE, new)
    with pytest.raises(SpecError) as info:
        load_catalogue(specs)
    assert Path(info.value.file).name == "mhc.yaml" and info.value.line == line
    assert "oracle" in info.value.path


def test_an_entry_without_an_oracle_is_a_problem(proj, tmp_path):
    specs = _copy_specs(proj, tmp_path)
    text = (specs / "mhc.yaml").read_text(encoding="utf-8")
    (specs / "mhc.yaml").write_text(text.replace("        " + P1_ORACLE + "\n", "", 1))
    problems = prr.verify(load_catalogue(specs), proj.fixtures)
    assert [(p.perturbation, "no oracle" in p.message) for p in problems] == [("P1", True)]


@pytest.mark.parametrize("spec, computed, same", [
    (0.474832767891, 0.4748327678911744, True), (0.474832767891, 0.47483276789, False),
    (1.0, 1 - 6.4e-31, True), (0.0, 0.0, True), (0.0, 1e-300, False), (0.039102591608, 0.0391025916080334, True),
    (True, 1.0, False), ("0.5", 0.5, False),
])
def test_matches_to_twelve_significant_digits(spec, computed, same):
    assert prr.matches(spec, computed) is same
