"""The specs' values are kept in the project's cache under a hash of what they were read from: a later
reader with the same inputs gets them without loading the catalogue, a changed byte loads it again."""
import json

import pytest

from fidelity.spec import SpecError, kept_values, values
from fidelity.spec.values import spec_value

from test_spec_values import write_spec


@pytest.fixture
def project_specs(tmp_path):
    """A project (fidelity.toml) whose specs/ holds one constant, toy.tmax = 20."""
    (tmp_path / "fidelity.toml").write_text("", encoding="utf-8")
    specs = tmp_path / "specs"
    specs.mkdir()
    write_spec(specs, values={"toy.tmax": 20})
    values._values.cache_clear()  # the per-process cache: each read below is a new process's first
    yield tmp_path, specs
    values._values.cache_clear()


def _kept_files(root):
    return sorted((root / ".fidelity-cache" / kept_values.FOLDER).glob("*.json"))


def test_a_second_reader_gets_the_kept_values_and_an_edited_spec_is_read_again(project_specs):
    root, specs = project_specs
    assert spec_value("toy.tmax", specs) == 20
    [kept] = _kept_files(root)
    kept.write_text(json.dumps({"toy.tmax": 21}), encoding="utf-8")  # what a reader of the kept file would see
    values._values.cache_clear()
    assert spec_value("toy.tmax", specs) == 21  # read back, not loaded
    write_spec(specs, values={"toy.tmax": 30})
    values._values.cache_clear()
    assert spec_value("toy.tmax", specs) == 30  # another key: loaded again
    assert len(_kept_files(root)) == 2


def test_a_schema_beside_the_specs_is_part_of_the_key(project_specs):
    root, specs = project_specs
    first = kept_values._key(specs)
    (specs / "spec.schema.json").write_text(json.dumps({"type": "object"}), encoding="utf-8")
    assert kept_values._key(specs) != first


def test_a_catalogue_that_does_not_load_is_never_kept(project_specs):
    root, specs = project_specs
    (specs / "toy.yaml").write_text("schema_version: [\n", encoding="utf-8")
    for _ in range(2):  # raised again on the second call: nothing was kept
        values._values.cache_clear()
        with pytest.raises(SpecError):
            spec_value("toy.tmax", specs)
    assert _kept_files(root) == []


def test_specs_outside_any_project_are_loaded_every_time(tmp_path):
    specs = write_spec(tmp_path, values={"toy.tmax": 20})
    loads = []
    assert kept_values.values(specs, None, lambda: loads.append(1) or {"toy.tmax": 20}) == {"toy.tmax": 20}
    assert kept_values.values(specs, None, lambda: loads.append(1) or {"toy.tmax": 20}) == {"toy.tmax": 20}
    assert loads == [1, 1] and not (tmp_path / ".fidelity-cache").exists()
