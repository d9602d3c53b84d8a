"""function_keys splits a file into a skeleton and one key per function body: an edit to a body moves only
that unit's key; everything run at import or by every caller (a def line, a constant, an import, a class
attribute) moves the skeleton; a function whose body is compiled or cached (an unknown decorator) or whose
definition is conditional has no unit of its own, so its body moves the skeleton."""
import textwrap
import types

import pytest

from fidelity.function_meaning import function_keys_of
from fidelity.source_meaning import kept_beside

SOURCE = textwrap.dedent('''
    """A module."""
    import math

    SCALE = 2.0


    def helper(x):
        """Doubles."""
        return x * SCALE


    def other(x, eps=1e-6):
        inner = lambda y: y + eps  # a comment
        return [inner(v) for v in x]


    class Layer:
        width = 3

        def forward(self, x):
            return helper(x) + self.width

        @staticmethod
        def build():
            return Layer()

        @property
        def size(self):
            return self.width


    @lru_cache(maxsize=None)
    def cached(n):
        return n + 1


    @triton.jit
    def kernel(x_ptr):
        pass


    if math.pi > 3:
        def conditional():
            return 1
''')


def keys(text=SOURCE):
    return function_keys_of(textwrap.dedent(text).encode())


def test_the_units_are_the_module_functions_and_methods_at_any_depth_of_classes():
    assert sorted(keys().units) == ["Layer.build", "Layer.forward", "Layer.size", "helper", "other"]


def test_a_comment_a_docstring_or_a_blank_line_moves_nothing():
    edited = SOURCE.replace('"""Doubles."""', '"""Doubles x, now said otherwise."""').replace(
        "# a comment", "# another comment\n\n")
    assert (keys(edited).skeleton, keys(edited).units) == (keys().skeleton, keys().units)


@pytest.mark.parametrize("find, replace, unit", [
    ("return x * SCALE", "return x * SCALE * 1", "helper"),
    ("return helper(x) + self.width", "return helper(x) - self.width", "Layer.forward"),
    ("inner = lambda y: y + eps", "inner = lambda y: y - eps", "other"),  # a lambda runs inside its unit
    ("return Layer()", "return Layer().build()", "Layer.build"),
])
def test_an_edit_to_a_body_moves_that_unit_only(find, replace, unit):
    before, after = keys(), keys(SOURCE.replace(find, replace))
    assert after.skeleton == before.skeleton
    assert {n for n in before.units if before.units[n] != after.units[n]} == {unit}


@pytest.mark.parametrize("find, replace", [
    ("SCALE = 2.0", "SCALE = 3.0"),                             # a module constant
    ("import math", "import math, cmath"),                      # an import
    ("def other(x, eps=1e-6):", "def other(x, eps=1e-5):"),     # a default
    ("def helper(x):", "def helper(x, y=0):"),                  # a signature
    ("    width = 3", "    width = 4"),                         # a class attribute
    ("    @staticmethod\n", "    @classmethod\n"),              # a decorator
    ("class Layer:", "def added():\n    return 0\n\n\nclass Layer:"),  # a new function (could newly be reached)
    ("    return n + 1", "    return n + 2"),           # a cached body: a caller may never run it
    ("    pass", "    x = 1"),                          # a compiled body: never run line by line
    ("        return 1", "        return 2"),           # a conditional definition
])
def test_what_runs_at_import_or_is_not_run_line_by_line_moves_the_skeleton(find, replace):
    assert find in SOURCE
    assert keys(SOURCE.replace(find, replace, 1)).skeleton != keys().skeleton


def test_a_renamed_function_is_a_new_unit_and_moves_the_skeleton():
    before, after = keys(), keys(SOURCE.replace("def other(", "def another("))
    assert after.skeleton != before.skeleton and "another" in after.units and "other" not in after.units


def code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_objects(const)


def test_each_code_object_is_placed_in_the_unit_that_holds_it_and_module_or_class_code_in_none():
    found = keys()
    placed = {(c.co_name, found.unit_at(c.co_firstlineno)) for c in code_objects(compile(SOURCE, "m.py", "exec"))}
    assert placed >= {("<module>", None), ("Layer", None), ("helper", "helper"), ("<lambda>", "other"),
                      ("<listcomp>", "other"), ("forward", "Layer.forward"), ("build", "Layer.build"),
                      ("size", "Layer.size"), ("cached", None), ("kernel", None), ("conditional", None)}


def test_a_second_definition_of_a_name_is_a_unit_of_its_own():
    found = keys('''
        class Box:
            @property
            def value(self):
                return self._v

            @value.setter
            def value(self, v):
                self._v = v
    ''')
    assert sorted(found.units) == ["Box.value", "Box.value#2"]


def test_a_file_that_does_not_parse_has_no_units():
    assert function_keys_of(b"def broken(:\n") is None


def test_a_files_split_is_kept_beside_it_for_its_bytes_and_read_back(tmp_path, monkeypatch):
    import json
    import sys

    from fidelity.function_meaning import function_keys

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    src = tmp_path / "m.py"
    src.write_text(SOURCE)
    first = function_keys(src)
    beside = kept_beside(src, "functions")
    assert first == keys() and [p.name for p in beside.parent.iterdir()] == [beside.name]
    assert function_keys(src) == first  # read back whole: skeleton, units and spans
    fmt, came_from, kept = beside.read_text().split("\n", 2)  # the format and the bytes' sha256, then the split
    planted = json.loads(kept)
    planted["units"]["helper"] = "0" * 64
    beside.write_text(f"{fmt}\n{came_from}\n{json.dumps(planted)}")  # read back: proof that it is read, not split
    assert function_keys(src).units["helper"] == "0" * 64
    assert function_keys_of(src.read_bytes(), src).units["helper"] == "0" * 64  # bytes read earlier: the same
    edited = SOURCE.replace("x * SCALE", "x * SCALE * 1")
    src.write_text(edited)  # other bytes: what was kept for the old ones is not read
    assert function_keys(src) == keys(edited) != first
    beside.write_text("damaged")
    assert function_keys(src) == keys(edited)


def test_no_split_is_kept_beside_a_file_where_python_writes_no_bytecode(tmp_path, monkeypatch):
    import sys

    from fidelity.function_meaning import function_keys

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    src = tmp_path / "m.py"
    src.write_text(SOURCE)
    assert function_keys(src) == keys() and not (tmp_path / "__pycache__").exists()
