"""Working precision and the exact/decimal conversions every oracle shares.

Oracles compute in sympy (exact) where a closed form exists and in mpmath
otherwise. mpmath work runs inside `precision()`, a local `mpmath.workdps`
context: the global `mp.dps` is never changed. Values are stored with
`DIGITS` significant digits, computed at `DPS` (20 guard digits).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

import mpmath
import sympy

DPS = 60
"""Working precision of every mpmath computation (decimal digits)."""

DIGITS = 40
"""Significant digits written to fixtures and returned as digit strings."""


def precision():
    """A local mpmath context at `DPS` digits (use as `with precision(): ...`)."""
    return mpmath.workdps(DPS)


GUARD_DPS = 2 * DPS
"""Digits at which a fast path recomputes an exact (sympy) value in mpmath before rounding it to DPS: the
same correctly rounded DPS-digit mpf that `mp` of the exact value gives, unless the value lies within
10^-GUARD_DPS (relative) of a rounding boundary; the tests compare the two, and so does every fixture."""


def guarded():
    """A local mpmath context at GUARD_DPS digits (a fast path's arithmetic, rounded after with `at_dps`)."""
    return mpmath.workdps(GUARD_DPS)


def at_dps(value):
    """Nested mpf rounded to DPS digits (as `mp` rounds an exact value's evalf)."""
    with precision():
        return nested(lambda x: +x, value)


def exact(value: Any) -> sympy.Expr:
    """An exact sympy value.

    int and Fraction map to Integer and Rational; a float or a decimal string
    is read as the DECIMAL it prints as ("1e-5" is 1/100000, not the nearest
    binary double); other strings are parsed by sympy ("-ln(4)", "1/3").
    """
    if isinstance(value, sympy.Basic):
        return value
    if isinstance(value, bool):
        raise TypeError("a bool is not a number here")
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    if isinstance(value, float):
        return sympy.Rational(repr(value))
    if isinstance(value, str):
        text = value.strip()
        try:
            return sympy.Rational(text)
        except (TypeError, ValueError):
            return sympy.sympify(text, rational=True)
    raise TypeError(f"cannot read {value!r} as an exact number")


def mp(value: Any) -> mpmath.mpf:
    """`value` as an mpf at the current mpmath precision (call inside `precision()`)."""
    if isinstance(value, mpmath.mpf):
        return +value
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        value = exact(value)
    if isinstance(value, str):
        value = exact(value)
    if isinstance(value, float):
        return mpmath.mpf(value)
    if isinstance(value, sympy.Basic):
        if value.is_Rational:
            return mpmath.mpf(int(value.p)) / int(value.q)
        evaluated = sympy.N(value, mpmath.mp.dps + 10)
        if evaluated.is_Rational:
            return mpmath.mpf(int(evaluated.p)) / int(evaluated.q)
        if not evaluated.is_Float:
            raise ValueError(f"{value} does not evaluate to a real number")
        return mpmath.mpf(evaluated._mpf_)
    raise TypeError(f"cannot convert {value!r} to mpf")


def digits(value: Any) -> str:
    """`value` as a decimal string with `DIGITS` significant digits ("nan", "+inf", "-inf" if not finite)."""
    with precision():
        x = mp(value)
        if mpmath.isnan(x):
            return "nan"
        if mpmath.isinf(x):
            return "+inf" if x > 0 else "-inf"
        return mpmath.nstr(x, DIGITS, strip_zeros=False, min_fixed=-4, max_fixed=DIGITS)


def twin(digit_string: str) -> float | str:
    """The float64 twin of a digit string: the correctly rounded double, or "nan"/"+inf"/"-inf"."""
    if digit_string in ("nan", "+inf", "-inf"):
        return digit_string
    return float(digit_string)


def nested(fn, value):
    """Apply `fn` to every leaf of nested lists/tuples, keeping the shape (lists out)."""
    if isinstance(value, (list, tuple)):
        return [nested(fn, v) for v in value]
    return fn(value)
