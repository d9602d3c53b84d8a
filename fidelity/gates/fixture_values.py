"""Fixture values as tensors: what a gate compares against.

Expected values come from the fixture's float64 twin of the oracle's
40-digit value, rounded once more to the compared dtype. Inputs that are
exact (JSON numbers) are used as written; inputs with a closed form
(e.g. "-ln(4)") use their float64 twin.

Each reads the current project's `fixtures/<fixture_id>.json` (written by `fidelity fixtures --regen`
from the builder `fidelity.fixtures.store.fixture` registered); the examples read this repository's
fixture `rmsnorm.example` (x = [10, 20, 30, 40], y = x / rms(x), eps = 0): name your own.
"""
from __future__ import annotations

import torch

from fidelity.fixtures import store


def fixture(fixture_id: str) -> dict:
    """The whole fixture, the caller's own copy."""
    return store.load(fixture_id)


def expected(fixture_id: str, field: str, dtype=torch.float64, device="cpu") -> torch.Tensor:
    """The fixture's expected value `field` (its "float64" side) as a tensor of `dtype` on `device`: the
    double nearest the oracle's 40 digits, rounded once more to `dtype`. Pass the dtype the subject
    computes in, so the comparison's only error is the subject's.

    >>> import torch
    >>> from fidelity.gates.fixture_values import expected
    >>> expected("rmsnorm.example", "y")
    tensor([0.3651, 0.7303, 1.0954, 1.4606], dtype=torch.float64)
    >>> expected("rmsnorm.example", "rms", torch.float32).item()
    27.386127471923828
    """
    entry = store.load_shared(fixture_id)["expected"][field]
    return torch.tensor(entry["float64"], dtype=torch.float64).to(dtype=dtype, device=device)


def predicted(fixture_id: str, name: str) -> dict:
    """A predicted red reading: {"field", "float64", "digits", "description"}."""
    return store.json_copy(store.load_shared(fixture_id)["predictions"][name])


def value(fixture_id: str, name: str, dtype=torch.float64, device="cpu", section: str = "inputs") -> torch.Tensor:
    """The fixture's input `name` as a tensor of `dtype` on `device` (an exact input as written, one with a
    closed form as its float64 twin); `section` reads another section of the same shape ("expected" gives
    its "float64" side). A fresh tensor each call: set requires_grad on it freely.

    >>> import torch
    >>> from fidelity.gates.fixture_values import value
    >>> value("rmsnorm.example", "x", torch.float32)
    tensor([10., 20., 30., 40.])
    >>> value("rmsnorm.example", "x").requires_grad_(True).dtype
    torch.float64
    """
    raw = store.load_shared(fixture_id)[section][name]
    if isinstance(raw, dict) and "float64" in raw:
        raw = raw["float64"]
    return torch.tensor(raw, dtype=torch.float64).to(dtype=dtype, device=device)


def param(fixture_id: str, name: str):
    """The fixture's parameter `name` as written in its "params" (a plain JSON value, the caller's copy):
    the keyword arguments a gate passes to the subject along with the inputs (eps, temperature, ...).

    >>> from fidelity.gates.fixture_values import param
    >>> param("rmsnorm.example", "eps"), param("rmsnorm.example", "gain")
    (0, 'ones')
    """
    return store.json_copy(store.load_shared(fixture_id)["params"][name])
