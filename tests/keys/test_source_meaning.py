"""Keys by meaning (fidelity/source_meaning.py): what keys the same and what keys apart."""
from __future__ import annotations

import sys

import pytest

from fidelity.source_meaning import kept_beside, meaning_sha256, meaning_sha256_of

MODULE = b'''"""A module."""
import math


def scale(x, k=2.0):
    """Scale x."""
    return k * x  # the paper's Eq. 1


class Gain:
    """A gain."""
    weight: float = 1.0

    def __call__(self, x):
        return self.weight * x
'''


def _py(text: bytes) -> str:
    return meaning_sha256_of(text, ".py")


@pytest.mark.parametrize("edited", [
    MODULE.replace(b"  # the paper's Eq. 1", b"  # Eq. 1 of the paper, read again"),
    MODULE.replace(b'"""Scale x."""', b'"""Scale x by k: a docstring rewritten."""'),
    MODULE.replace(b'    """A gain."""\n', b""),
    MODULE.replace(b"\n\n\ndef", b"\n\n\n\n# a comment line\n\ndef"),
    MODULE.replace(b"return k * x", b"return (k\n            * x)"),
    MODULE.replace(b"k=2.0", b"k = 2.0"),
    MODULE.replace(b'"""A module."""', b"'''A module, quoted otherwise.'''"),
], ids=["a comment", "a docstring", "a docstring removed", "blank and comment lines", "a line break",
        "spacing", "a quoting style"])
def test_a_comment_docstring_or_layout_edit_keys_the_same(edited):
    assert edited != MODULE
    assert _py(edited) == _py(MODULE)


@pytest.mark.parametrize("edited", [
    MODULE.replace(b"k=2.0", b"k=2.5"),
    MODULE.replace(b"k=2.0", b"k=2"),
    MODULE.replace(b"return k * x", b"return k + x"),
    MODULE.replace(b"return k * x", b"return x * k"),
    MODULE.replace(b"weight: float = 1.0", b"weight: int = 1.0"),
    MODULE.replace(b"import math", b"import cmath"),
    MODULE.replace(b"return self.weight * x", b"return self.weight * x  \n        'a string statement'"),
    MODULE.replace(b"def scale", b"@staticmethod\ndef scale"),
], ids=["a literal", "a float turned int", "an operator", "operand order", "an annotation", "an import",
        "a string statement that is not a docstring", "a decorator"])
def test_an_edit_the_interpreter_runs_keys_apart(edited):
    assert _py(edited) != _py(MODULE)


def test_one_one_point_zero_and_true_key_apart():
    keys = {_py(b"x = " + v + b"\n") for v in (b"1", b"1.0", b"True", b"None", b"'1'")}
    assert len(keys) == 5


def test_a_return_of_none_and_a_bare_return_key_apart():
    assert _py(b"def f():\n    return None\n") != _py(b"def f():\n    return\n")


def test_python_that_does_not_parse_is_keyed_by_its_bytes():
    broken = b"def f(:\n    return 1\n"
    assert _py(broken) != _py(broken + b"# a comment\n")


SPEC = b"""# a spec
equations:
  - id: toy.add   # Eq. 1
    value: 1
    tags: [a, b]
"""


def test_yaml_comments_and_layout_key_the_same():
    edited = SPEC.replace(b"   # Eq. 1", b"").replace(b"tags: [a, b]", b"tags:\n      - a\n      - b")
    assert meaning_sha256_of(edited, ".yaml") == meaning_sha256_of(SPEC, ".yaml")


@pytest.mark.parametrize("edited", [
    SPEC.replace(b"value: 1", b"value: '1'"),
    SPEC.replace(b"tags: [a, b]", b"tags: [b, a]"),
    SPEC.replace(b"id: toy.add", b"id: toy.sub"),
], ids=["1 and '1'", "list order", "a value"])
def test_a_yaml_value_or_order_keys_apart(edited):
    assert meaning_sha256_of(edited, ".yaml") != meaning_sha256_of(SPEC, ".yaml")


def test_other_files_are_keyed_by_their_bytes():
    assert meaning_sha256_of(b'{"a": 1}', ".json") != meaning_sha256_of(b'{"a":1}', ".json")


def test_a_memo_reads_back_the_key_its_bytes_gave_and_recomputes_a_damaged_entry(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # nothing kept beside the file: the memo answers
    src = tmp_path / "m.py"
    src.write_bytes(MODULE)
    memo = tmp_path / "memo"
    first = meaning_sha256(src, memo)
    assert first == _py(MODULE) and meaning_sha256(src) == first
    entries = [p for p in memo.rglob("*.py") if p.is_file()]
    assert len(entries) == 1
    entries[0].write_text("damaged")
    assert meaning_sha256(src, memo) == first and entries[0].read_text() == first
    src.write_bytes(MODULE.replace(b"k=2.0", b"k=3.0"))
    assert meaning_sha256(src, memo) != first


def test_a_python_files_key_is_kept_beside_it_for_its_bytes_and_read_back_by_any_project(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    src = tmp_path / "m.py"
    src.write_bytes(MODULE)
    first = meaning_sha256(src, tmp_path / "one project")
    beside = kept_beside(src, "meaning")
    assert first == _py(MODULE) and [p.name for p in beside.parent.iterdir()] == [beside.name]
    planted = beside.read_text().replace(first, "0" * 64)
    beside.write_text(planted)  # what another project would read back: proof that it is read, not recomputed
    assert meaning_sha256(src, tmp_path / "another project") == "0" * 64
    src.write_bytes(MODULE.replace(b"k=2.0", b"k=3.0"))  # other bytes: what was kept for the old ones is not read
    assert meaning_sha256(src, tmp_path / "another project") == _py(MODULE.replace(b"k=2.0", b"k=3.0")) != first
    beside.write_text("damaged")
    assert meaning_sha256(src) == _py(MODULE.replace(b"k=2.0", b"k=3.0"))


def test_nothing_is_kept_beside_a_file_where_python_writes_no_bytecode(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    src = tmp_path / "m.py"
    src.write_bytes(MODULE)
    assert meaning_sha256(src) == _py(MODULE) and not (tmp_path / "__pycache__").exists()


def test_a_missing_file_has_no_key(tmp_path):
    assert meaning_sha256(tmp_path / "absent.py") is None


def test_the_memo_keeps_only_parsed_files_whose_key_costs_more_than_a_lookup(tmp_path):
    memo = tmp_path / "memo"
    for name, text in (("m.py", MODULE), ("s.yaml", SPEC), ("f.json", b'{"a": 1}')):
        (tmp_path / name).write_bytes(text)
        meaning_sha256(tmp_path / name, memo)
    assert sorted(p.suffix for p in memo.rglob("*") if p.is_file()) == [".py", ".yaml"]


def test_keying_a_file_with_an_invalid_escape_warns_nothing():
    # keying is not compiling: the DeprecationWarning (SyntaxWarning from 3.12) is the file's runner's to give
    import warnings

    from fidelity.function_meaning import function_keys_of

    source = b'import re\nDIGITS = re.compile("\\d+")\n'
    assert b'"\\d+"' in source
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        meaning_sha256_of(source, ".py")
        function_keys_of(source)
    assert [str(w.message) for w in caught] == []
