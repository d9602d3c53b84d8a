"""The numbers the specs fix, read by id: one home for a default the paper or our tier-c choice gives.

An equation of kind `constant` or `init` may carry `value:` (mhc.table5.tmax: 20). Oracles and
fixture builders read it here, so a default is typed once, in the spec, and a gate compares a
subject called without the optional argument with what the oracle computed at that value.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sympy


class NoSpecValue(LookupError):
    """An equation id that is not in the specs, or has no `value:`."""


@lru_cache(maxsize=None)
def _values(specs_dir: Path) -> dict[str, object]:
    from fidelity.spec import kept_values

    def load() -> dict[str, object]:
        from fidelity.spec.loader import load_catalogue

        cat = load_catalogue(specs_dir)
        return {eq_id: item.get("value") for eq_id, item in cat.equations.items()}

    return kept_values.values(specs_dir, _project_root(specs_dir), load)


def _project_root(specs_dir: Path) -> Path | None:
    """The root of the project holding `specs_dir` (whose cache keeps the values), or None."""
    from fidelity import project

    try:
        return project.find(specs_dir).root
    except project.ProjectNotFound:
        return None


def _specs_dir(specs_dir: Path | str | None) -> Path:
    if specs_dir is not None:
        return Path(specs_dir).resolve()
    from fidelity import project

    return Path(project.current().specs).resolve()


def equation_ids(specs_dir: Path | str | None = None) -> frozenset[str]:
    """Every equation id the specs define, read as the values are (a gate's child loads no catalogue)."""
    return frozenset(_values(_specs_dir(specs_dir)))


def spec_value_exact(equation_id: str, specs_dir: Path | str | None = None) -> sympy.Rational:
    """The `value:` of `equation_id` as an exact sympy Rational (1e-20 is 10^-20, not the nearest double),
    for an oracle that computes exactly.

    - `equation_id`: a spec equation id of kind `constant` or `init` that carries `value:`.
    - `specs_dir`: the specs folder to read; default, the current project's (`specs` in its pyproject).

    NoSpecValue (a LookupError) when the id is not in the specs or has no `value:`, saying which.

    >>> from fidelity.spec.values import spec_value_exact
    >>> spec_value_exact("attnres.eps")  # in this repository's specs: value: "1e-6"
    1/1000000
    """
    import sympy  # here, not at the top: equation_ids is asked by gate collection, which needs no sympy

    values = _values(_specs_dir(specs_dir))
    if equation_id not in values:
        raise NoSpecValue(f"no equation {equation_id!r} in the specs; `fidelity list equations` lists them")
    raw = values[equation_id]
    if raw is None:
        raise NoSpecValue(f"equation {equation_id!r} has no `value:`; give the number it fixes in its spec entry")
    return sympy.Rational(str(raw)) if not isinstance(raw, bool) else sympy.Integer(int(raw))


def spec_value(equation_id: str, specs_dir: Path | str | None = None) -> int | float:
    """The `value:` of `equation_id` as Python writes a default: an int when whole and written so (`16`),
    else a float (`"1e-6"`, `"-1/2"`, `2.0`). Read a default here, in an oracle or fixture builder, instead
    of typing the number again: the spec stays its one home, and a gate holds a subject called without
    the argument to what the oracle computed at this value. Arguments and errors as `spec_value_exact`.

    >>> from fidelity.spec.values import spec_value
    >>> spec_value("attnres.eps"), spec_value("attnres.rmsnorm_gain")  # this repository's specs
    (1e-06, 1)
    >>> spec_value("attnres.no_such_item")
    Traceback (most recent call last):
    ...
    fidelity.spec.values.NoSpecValue: no equation 'attnres.no_such_item' in the specs; `fidelity list equations` lists them
    """
    exact = spec_value_exact(equation_id, specs_dir)
    raw = _values(_specs_dir(specs_dir))[equation_id]
    if exact.q == 1 and not (isinstance(raw, float) or (isinstance(raw, str) and any(c in raw for c in ".eE/"))):
        return int(exact)
    return float(exact)
