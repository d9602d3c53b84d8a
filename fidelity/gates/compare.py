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
    """`eps_multiple` x machine epsilon of the compared dtype, relative, with `floor` under |expected|."""

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
    """Assert elementwise relative closeness; record and return the worst relative error."""
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
    """Assert a scalar reading lies within stated bounds; record it either way."""
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
