"""spec_value reads an equation's `value:`: exact as a rational, and as Python writes the default."""
import sympy
import pytest

from fidelity.spec.values import NoSpecValue, spec_value, spec_value_exact

from spec_toy import MINIMAL


def write_spec(tmp_path, values: dict, without_value=()):
    """MINIMAL with one constant equation per `values` entry (and plain ones for `without_value`)."""
    entries = [f"  - id: {eq}\n    title: a constant\n    kind: constant\n    where: {{section: \"2\"}}\n"
               f"    statement: a number\n    tier: c\n    status: implemented\n"
               + (f"    value: {v!r}\n" if isinstance(v, str) else f"    value: {v}\n")
               for eq, v in values.items()]
    entries += [f"  - id: {eq}\n    title: no number\n    where: {{section: \"2\"}}\n    statement: none\n"
                f"    tier: c\n    status: implemented\n" for eq in without_value]
    text = MINIMAL.replace("claims:\n", "".join(entries) + "claims:\n", 1)
    (tmp_path / "toy.yaml").write_text(text, encoding="utf-8")
    return tmp_path


def test_values_are_read_exactly_and_as_python_defaults(tmp_path):
    specs = write_spec(tmp_path, values={"toy.tmax": 20, "toy.eps": "1e-20", "toy.alpha": 0.01, "toy.third": "1/3"})
    assert spec_value("toy.tmax", specs) == 20 and isinstance(spec_value("toy.tmax", specs), int)
    assert spec_value_exact("toy.eps", specs) == sympy.Rational(1, 10 ** 20)
    assert spec_value("toy.eps", specs) == 1e-20 and spec_value("toy.alpha", specs) == 0.01
    assert spec_value_exact("toy.third", specs) == sympy.Rational(1, 3)


def test_a_missing_equation_or_value_says_what_to_do(tmp_path):
    specs = write_spec(tmp_path, values={"toy.tmax": 20}, without_value=["toy.plain"])
    with pytest.raises(NoSpecValue, match="no equation 'toy.nope'"):
        spec_value("toy.nope", specs)
    with pytest.raises(NoSpecValue, match="has no `value:`"):
        spec_value("toy.plain", specs)
