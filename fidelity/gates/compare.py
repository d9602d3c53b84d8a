"""Tolerance policy and comparison messages for gates.

Policy (README, Design: tolerance policy):
- compare RELATIVE error with an explicit floor: err_i = |a_i - e_i| / max(|e_i|, floor);
- the bound is a stated multiple of the dtype's machine epsilon, written beside the gate;
- the reading (the worst err_i) is recorded green or red, so the perturbation
  runner can keep what the gate saw.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from fidelity.gates import readings


class GateFailure(AssertionError):
    """A gate's own assertion failed; `reading` is the number it compared."""

    def __init__(self, message: str, reading: float):
        super().__init__(message)
        self.reading = reading


@dataclass(frozen=True)
class Tolerance:
    """A relative bound stated in machine epsilons: `eps_multiple` x eps of the compared dtype.

    - `eps_multiple`: how many machine epsilons of the compared dtype an element may differ by, relative to
      |expected|; the bound in a dtype is `rtol(dtype)` = eps_multiple x torch.finfo(dtype).eps (eps is
      2^-23 ~ 1.19e-7 in float32, 2^-52 ~ 2.22e-16 in float64), so one Tolerance serves every dtype a gate
      is parametrised over. Write the reason for the multiple beside it: how many roundings the
      computation has, and how far the defects it must catch lie (README, Design: tolerance policy).
    - `floor`: in the units of the compared values, the smallest denominator of the relative error:
      err_i = |a_i - e_i| / max(|e_i|, floor). Where |expected| lies below the floor the bound turns
      absolute, rtol x floor. The default 1e-30 only keeps an expected 0 from dividing by zero and leaves
      every comparison relative (an expected 0 then accepts nothing but 0 give or take 1e-30 x rtol);
      raise it to the size below which a difference does not matter (e.g. the output's scale) when some
      expected values are zero or only rounding of zero.

    >>> import torch
    >>> from fidelity.gates.compare import Tolerance
    >>> tol = Tolerance(eps_multiple=16)
    >>> tol.rtol(torch.float32), tol.rtol(torch.float64)
    (1.9073486328125e-06, 3.552713678800501e-15)
    >>> tol.describe(torch.float32)
    '16 x eps(float32) = 1.91e-06 relative, floor 1e-30'
    """

    eps_multiple: float
    floor: float = 1e-30

    def rtol(self, dtype: torch.dtype) -> float:
        return self.eps_multiple * torch.finfo(dtype).eps

    def describe(self, dtype: torch.dtype) -> str:
        return f"{self.eps_multiple:g} x eps({str(dtype).replace('torch.', '')}) = {self.rtol(dtype):.3g} relative, floor {self.floor:g}"


def relative_error(actual: torch.Tensor, expected: torch.Tensor, floor: float) -> torch.Tensor:
    actual64 = actual.detach().to(torch.float64).cpu()
    expected64 = expected.detach().to(torch.float64).cpu()
    return (actual64 - expected64).abs() / expected64.abs().clamp_min(floor)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, tol: Tolerance, *, what: str,
                 dtype: torch.dtype | None = None, reading_name: str = "reading") -> float:
    """Assert that every element of `actual` lies within `tol` of `expected`, relatively; return the worst
    relative error, max_i |a_i - e_i| / max(|e_i|, tol.floor), recorded as the gate's reading.

    - `actual`: what the subject computed (any dtype and device; compared in float64 on the CPU).
    - `expected`: the oracle's values, the same shape (`fidelity.gates.fixture_values.expected`).
    - `tol`: the `Tolerance`; its bound is taken in `dtype`, by default `actual`'s dtype.
    - `what`: names the compared quantity in the failure message ("q at T = 2").
    - `reading_name`: the name the reading is recorded under (several comparisons in one gate keep one each).

    A non-finite element of `actual` is infinitely far. A failure raises `GateFailure` (an AssertionError:
    the gate's own assertion, red) naming how many elements differ, the worst one, its index and how many
    bounds away it lies; a shape mismatch is a ValueError (red for another reason, never the gate's reading).

    >>> import torch
    >>> from fidelity.gates.compare import Tolerance, assert_close
    >>> expected = torch.tensor([0.1, 2.0], dtype=torch.float64)
    >>> assert_close(torch.tensor([0.1, 2.0]), expected, Tolerance(16), what="y")  # float32 rounding of 0.1
    1.4901161138336505e-08
    >>> assert_close(torch.tensor([0.1, 2.1]), expected, Tolerance(16), what="y")
    Traceback (most recent call last):
    ...
    fidelity.gates.compare.GateFailure: y: 1 of 2 elements differ beyond 16 x eps(float32) = 1.91e-06 relative, floor 1e-30; worst at index (1,): got 2.0999999046325684, expected 2.0, |diff| 0.0999999, relative 0.05 (2.62e+04 x the bound). reading=0.0499999523
    """
    dtype = dtype or actual.dtype
    if actual.shape != expected.shape:
        # A shape mismatch is not this gate's assertion: it is "red for another reason".
        raise ValueError(f"{what}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    err = relative_error(actual, expected, tol.floor)
    finite = torch.isfinite(actual.detach().to(torch.float64).cpu())
    err = torch.where(finite, err, torch.full_like(err, float("inf")))
    worst = float(err.max()) if err.numel() else 0.0
    readings.record(worst, reading_name, by_comparison=True)
    rtol = tol.rtol(dtype)
    if not worst <= rtol:
        bad = int((err > rtol).sum())
        flat = int(err.reshape(-1).argmax())
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), err.shape)) if err.dim() else ()
        a = actual.detach().to(torch.float64).cpu().reshape(-1)[flat].item()
        e = expected.detach().to(torch.float64).cpu().reshape(-1)[flat].item()
        raise GateFailure(
            f"{what}: {bad} of {err.numel()} elements differ beyond {tol.describe(dtype)}; "
            f"worst at index {index}: got {a!r}, expected {e!r}, |diff| {abs(a - e):.6g}, "
            f"relative {worst:.6g} ({_times(worst, rtol)} the bound). reading={worst:.9g}",
            worst)
    return worst


def _times(worst: float, rtol: float) -> str:
    """How far past the bound, in units of it; an exact (zero) bound has no units."""
    return f"{worst / rtol:.3g} x" if rtol > 0 else "any difference exceeds"


def assert_bound(value: float, *, at_most: float | None = None, at_least: float | None = None,
                 what: str, reading_name: str = "reading") -> float:
    """Assert that a scalar `value` lies within `at_least` .. `at_most` (either may be None: no bound on
    that side); record it as the gate's reading either way and return it as a float.

    For a reading that is not an elementwise comparison: a count of differences (at_most=0), a ratio
    (at_least=0.5), a separation in tolerances. `what` names the reading in the failure message; a
    failure raises `GateFailure` carrying `value` as its reading.

    >>> from fidelity.gates.compare import assert_bound
    >>> assert_bound(0.93, at_least=0.5, what="output change / oracle change")
    0.93
    >>> assert_bound(3, at_most=0, what="results that differ")
    Traceback (most recent call last):
    ...
    fidelity.gates.compare.GateFailure: results that differ: reading 3 is not <= 0. reading=3
    """
    value = float(value)
    readings.record(value, reading_name, by_comparison=True)
    low_ok = at_least is None or value >= at_least
    high_ok = at_most is None or value <= at_most
    if not (low_ok and high_ok):
        bounds = " and ".join(b for b in (f">= {at_least:.6g}" if at_least is not None else "",
                                           f"<= {at_most:.6g}" if at_most is not None else "") if b)
        raise GateFailure(f"{what}: reading {value:.9g} is not {bounds}. reading={value:.9g}", value)
    return value


def separation(expected: float, predicted_wrong: float, tol: Tolerance, dtype: torch.dtype) -> float:
    """Distance from the right value to a perturbation's predicted value, in units of the tolerance."""
    rel = abs(predicted_wrong - expected) / max(abs(expected), tol.floor)
    return rel / tol.rtol(dtype)


# README, Design: separation: a prediction under 10 tolerances from the right value is a weak gate.
SEPARATION_MIN = 10.0


def distance_in_tolerances(a: torch.Tensor, b: torch.Tensor, scale: torch.Tensor, tol: Tolerance,
                           dtype: torch.dtype) -> float:
    """max_i |a_i - b_i| / max(|scale_i|, floor), in units of tol.rtol(dtype); a nan anywhere is infinitely far."""
    rel = (a - b).abs() / scale.abs().clamp_min(tol.floor)
    rel = torch.where(torch.isnan(rel), torch.full_like(rel, math.inf), rel)
    return float(rel.max()) / tol.rtol(dtype)


def assert_predictions_separated(fixture_side: dict[str, float], subject_side: dict[str, float], *,
                                 output: str, at_least: float = SEPARATION_MIN) -> float:
    """Each predicted defect's distance in tolerances from the right value (fixture side) and from
    the subject's output (subject side). A weak fixture-side one is no fault of the subject: a
    ValueError (red for another reason). The weakest subject-side one is the gate's assertion and
    reading; the weakest fixture-side one is kept as `weakest_fixture_separation`."""
    weakest_fixture = min(fixture_side, key=fixture_side.get)
    readings.record(fixture_side[weakest_fixture], "weakest_fixture_separation")
    if fixture_side[weakest_fixture] < at_least:
        raise ValueError(f"fixture prediction {weakest_fixture} lies only {fixture_side[weakest_fixture]:.3g} "
                         "tolerances from the right value: a weak gate (fix the fixture or the tolerance)")
    weakest = min(subject_side, key=subject_side.get)
    return assert_bound(subject_side[weakest], at_least=at_least,
                        what=f"separation of the subject's {output} from predicted defect {weakest}, in tolerances")
