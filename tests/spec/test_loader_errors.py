"""Every kind of bad spec gives one SpecError naming the file, the line and the key path."""
import pytest

from fidelity.spec import SpecError, load_catalogue


def _break(spec_dir, old, new, count=1):
    path = spec_dir / "toy.yaml"
    text = path.read_text()
    assert text.count(old) >= count, f"test fixture lacks {old!r}"
    path.write_text(text.replace(old, new, count))
    return path


def _error(spec_dir) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_catalogue(spec_dir)
    return info.value


def _line_of(spec_dir, needle):
    lines = (spec_dir / "toy.yaml").read_text().splitlines()
    return next(i + 1 for i, l in enumerate(lines) if needle in l)


def test_the_valid_toy_spec_loads(spec_dir):
    cat = load_catalogue(spec_dir)
    assert list(cat.equations) == ["toy.eq1", "toy.eq2"]
    assert cat.get("toy.claim.one").kind == "claim"
    assert cat.equations["toy.eq2"].line == _line_of(spec_dir, "id: toy.eq2")


def test_malformed_yaml_names_file_and_line(spec_dir):
    _break(spec_dir, "statement: y = 2 x", "statement: [y = 2 x")
    err = _error(spec_dir)
    assert err.file.endswith("toy.yaml") and "malformed YAML" in err.message
    assert err.line is not None and err.line >= _line_of(spec_dir, "[y = 2 x")


def test_wrong_type_names_the_key_path(spec_dir):
    _break(spec_dir, "tier: b\n    status: implemented", "tier: d\n    status: implemented")
    err = _error(spec_dir)
    assert err.path == ("equations", 0, "tier")
    assert err.line == _line_of(spec_dir, "tier: d")
    assert "'d' is not one of" in err.message


def test_missing_field_is_named(spec_dir):
    _break(spec_dir, "    statement: y = 2 x\n", "")
    err = _error(spec_dir)
    assert err.path == ("equations", 0)
    assert "missing field" in err.message and "statement" in err.message


def test_unknown_key_points_at_its_own_line(spec_dir):
    _break(spec_dir, "    tier: b\n    status: implemented", "    tier: b\n    teir: a\n    status: implemented")
    err = _error(spec_dir)
    assert err.path == ("equations", 0, "teir")
    assert err.line == _line_of(spec_dir, "teir: a")
    assert "unknown key 'teir'" in err.message


def test_duplicate_id_names_both_places(spec_dir):
    _break(spec_dir, "- id: toy.eq2", "- id: toy.eq1")
    err = _error(spec_dir)
    assert err.path == ("equations", 1, "id")
    assert "duplicate id 'toy.eq1'" in err.message and f"toy.yaml:{_line_of(spec_dir, '- id: toy.eq1')}" in err.message


def test_duplicate_id_across_files(spec_dir):
    other = (spec_dir / "toy.yaml").read_text().replace("id: toy\n", "id: toy2\n")
    other = other.replace("toy.", "toy2.").replace("id: toy2.eq1", "id: toy.eq1", 1)
    (spec_dir / "zz_other.yaml").write_text(other)
    err = _error(spec_dir)
    assert err.file.endswith("zz_other.yaml")
    assert "must start with this paper's id" in err.message or "duplicate id" in err.message


def test_reference_to_a_missing_id(spec_dir):
    _break(spec_dir, "refs: [toy.eq1]", "refs: [toy.eq9]")
    err = _error(spec_dir)
    assert err.path == ("equations", 1, "refs", 0)
    assert "'toy.eq9', which no spec defines" in err.message
    assert err.line == _line_of(spec_dir, "refs: [toy.eq9]")


def test_key_given_twice(spec_dir):
    _break(spec_dir, "    tier: b\n    status: implemented", "    tier: b\n    tier: c\n    status: implemented")
    err = _error(spec_dir)
    assert "key given twice" in err.message and err.line == _line_of(spec_dir, "tier: c")


def test_id_of_another_paper(spec_dir):
    _break(spec_dir, "- id: toy.eq2", "- id: mhc.eq2")
    assert "must start with this paper's id 'toy'" in _error(spec_dir).message


def test_unreadable_and_empty_files(spec_dir):
    (spec_dir / "toy.yaml").write_text("")
    assert "empty" in _error(spec_dir).message
    (spec_dir / "toy.yaml").write_bytes(b"\xff\xfe\x00garbage")
    assert "cannot read" in _error(spec_dir).message


def test_date_stays_text(spec_dir):
    cat = load_catalogue(spec_dir)
    assert cat.papers["toy"].data["read"]["date"] == "2026-11-29"


def test_message_format(spec_dir):
    _break(spec_dir, "tier: b\n    status: implemented", "tier: 3\n    status: implemented")
    text = str(_error(spec_dir))
    assert text.startswith(str(spec_dir / "toy.yaml").lstrip("/")[-8:]) or "toy.yaml:" in text
    assert "equations[0].tier:" in text


def test_an_unhashable_key_is_a_spec_error(spec_dir):
    (spec_dir / "toy.yaml").write_text("schema_version: 1\n? [a, b]\n: 1\n")
    assert "malformed YAML" in _error(spec_dir).message
