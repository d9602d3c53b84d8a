"""check --subject runs only the gate files that can hold the subject (fidelity.gaterun.subject_gate_files):
those with a gate naming one of its mechanisms, read from the source; a file whose mechanism the source
does not say as a constant is kept, so nothing that could hold the subject is left out."""
from pathlib import Path

from fidelity import cache, project
from fidelity.gaterun.subject_gate_files import files_for, gate_files
from fidelity.perturb import gate_index


def test_every_file_with_an_instance_of_a_mechanism_is_selected_for_it_and_no_other_file_is():
    here = project.current()
    index = gate_index.collect([here.relative(here.gates)], repo_root=here.root, cache_dir=cache.cache_dir(here.root))
    by_mechanism: dict[str, set[str]] = {}
    for item in index.items:
        if item.get("mechanism"):
            by_mechanism.setdefault(item["mechanism"], set()).add(item["nodeid"].split("::")[0])
    assert len(by_mechanism) >= 7
    for mechanism, files in by_mechanism.items():
        assert {here.relative(f) for f in files_for(here.gates, [mechanism])} == files, mechanism


def _write(folder: Path, name: str, text: str) -> Path:
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def test_a_file_is_kept_by_a_literal_a_constant_or_an_imported_constant_and_kept_when_unreadable(tmp_path):
    _write(tmp_path, "point.py", 'MECH = "sinkhorn"\n')
    literal = _write(tmp_path, "test_literal.py", '@pytest.mark.gate(equations=["e"], mechanism="sinkhorn")\ndef test_a(subject): pass\n')
    constant = _write(tmp_path, "test_constant.py", 'M = "sinkhorn"\n@pytest.mark.gate(mechanism=M)\ndef test_a(subject): pass\n')
    imported = _write(tmp_path, "test_imported.py", 'from point import MECH\n@pytest.mark.gate(mechanism=MECH)\ndef test_a(subject): pass\n')
    computed = _write(tmp_path, "test_computed.py", '@pytest.mark.gate(mechanism=name())\ndef test_a(subject): pass\n')
    broken = _write(tmp_path, "test_broken.py", "def test_a(:\n")
    other = _write(tmp_path, "test_other.py", '@pytest.mark.gate(mechanism="loop_model")\ndef test_a(subject): pass\n')
    plain = _write(tmp_path, "test_plain.py", '@pytest.mark.gate(equations=["e"])\ndef test_a(): pass\n')

    assert files_for(tmp_path, ["sinkhorn"]) == sorted([literal, constant, imported, computed, broken])
    assert files_for(tmp_path, ["loop_model"]) == sorted([other, computed, broken])
    assert plain not in files_for(tmp_path, ["sinkhorn", "loop_model"])


def test_a_subject_no_gate_names_gets_the_whole_suite_rather_than_nothing(tmp_path):
    _write(tmp_path, "test_one.py", '@pytest.mark.gate(mechanism="sinkhorn")\ndef test_a(subject): pass\n')
    assert files_for(tmp_path, ["unheard_of"]) == gate_files(tmp_path)


def test_the_internal_variable_narrows_the_selection_to_the_files_it_names_and_refuses_a_name_of_none(tmp_path, monkeypatch,
                                                                                                     capsys):
    """FIDELITY_ONLY_GATE_FILES: the project's own tests that read a few gates' results run only those files."""
    import os

    import pytest

    from fidelity.gaterun.subject_gate_files import ONLY_ENV

    (tmp_path / "sub").mkdir()
    one = _write(tmp_path, "test_one.py", '@pytest.mark.gate(mechanism="sinkhorn")\ndef test_a(subject): pass\n')
    _write(tmp_path, "test_two.py", '@pytest.mark.gate(mechanism="sinkhorn")\ndef test_a(subject): pass\n')
    nested = _write(tmp_path / "sub", "test_three.py", '@pytest.mark.gate(mechanism="loop_model")\ndef test_a(subject): pass\n')
    monkeypatch.setenv(ONLY_ENV, os.pathsep.join(["test_one.py", "sub/test_three.py"]))
    assert files_for(tmp_path, ["sinkhorn"]) == sorted([one, nested])  # by name, whatever mechanism each holds
    assert f"{ONLY_ENV} narrows the gate files to sub/test_three.py, test_one.py" in capsys.readouterr().err  # said
    monkeypatch.setenv(ONLY_ENV, "test_one.py" + os.pathsep + "test_typo.py")
    with pytest.raises(ValueError, match=f"{ONLY_ENV} names .*test_typo.py, which is not a gate file under"):
        files_for(tmp_path, ["sinkhorn"])
    monkeypatch.delenv(ONLY_ENV)
    assert files_for(tmp_path, ["sinkhorn"]) == [one, tmp_path / "test_two.py"]  # unset: the selection by mechanism
