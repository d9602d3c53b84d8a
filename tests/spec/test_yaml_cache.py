"""The spec YAML's speed paths (libyaml's parser, the per-process cache) change nothing a caller sees."""
from pathlib import Path

import pytest

from fidelity.spec import yaml_source as ys
from fidelity.spec.errors import SpecError

SPECS = sorted((Path(__file__).resolve().parents[2] / "specs").glob("*.yaml"))


@pytest.mark.parametrize("file", SPECS, ids=lambda f: f.name)
def test_c_parser_gives_the_python_loaders_data_and_lines(file):
    if ys._CParser is None:
        pytest.skip("PyYAML without libyaml: only the Python loader runs")
    text = file.read_text(encoding="utf-8")
    fast, slow = ys._fast_parse(file, text), ys._parse(file, text)
    assert fast is not None
    assert fast[0] == slow[0]
    assert fast[1]._lines == slow[1]._lines


def test_a_changed_file_is_parsed_again(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("a: 1\nb: [2, 3]\n", encoding="utf-8")
    assert ys.load_yaml(f)[0] == {"a": 1, "b": [2, 3]}
    f.write_text("a: 1\n\nb: [2, 4]\n", encoding="utf-8")
    data, index = ys.load_yaml(f)
    assert data == {"a": 1, "b": [2, 4]}
    assert index.line_of(("b",)) == 3


def test_each_caller_gets_its_own_copy(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("a: {x: [1]}\n", encoding="utf-8")
    ys.load_yaml(f)[0]["a"]["x"].append(2)
    assert ys.load_yaml(f)[0] == {"a": {"x": [1]}}


def test_errors_and_more_aliases_than_the_limit_take_the_python_loader(tmp_path):
    f = tmp_path / "s.yaml"
    alias = "a: &x [1, 2]\nb: *x\n"
    assert ys._fast_parse(f, alias)[0] == ys._parse(f, alias)[0] == {"a": [1, 2], "b": [1, 2]}
    assert ys._fast_parse(f, "a: &x 1\nb: [" + "*x, " * ys.MAX_ALIASES + "*x]\n") is None
    assert ys._fast_parse(f, "a: [1, 2\nb: 3\n") is None
    f.write_text("a: 1\nb: [2, 3\nc: 4\n", encoding="utf-8")
    with pytest.raises(SpecError) as exc:
        ys.load_yaml(f)
    assert exc.value.line == 2  # where the unclosed bracket starts, as the Python loader says
