"""Fixture values as tensors: what a gate compares against.

Expected values come from the fixture's float64 twin of the oracle's
40-digit value, rounded once more to the compared dtype. Inputs that are
exact (JSON numbers) are used as written; inputs with a closed form
(e.g. "-ln(4)") use their float64 twin.
"""
from __future__ import annotations

import torch

from fidelity.fixtures import store


def fixture(fixture_id: str) -> dict:
    """The whole fixture, the caller's own copy."""
    return store.load(fixture_id)


def expected(fixture_id: str, field: str, dtype=torch.float64, device="cpu") -> torch.Tensor:
    entry = store.load_shared(fixture_id)["expected"][field]
    return torch.tensor(entry["float64"], dtype=torch.float64).to(dtype=dtype, device=device)


def predicted(fixture_id: str, name: str) -> dict:
    """A predicted red reading: {"field", "float64", "digits", "description"}."""
    return store.json_copy(store.load_shared(fixture_id)["predictions"][name])


def value(fixture_id: str, name: str, dtype=torch.float64, device="cpu", section: str = "inputs") -> torch.Tensor:
    raw = store.load_shared(fixture_id)[section][name]
    if isinstance(raw, dict) and "float64" in raw:
        raw = raw["float64"]
    return torch.tensor(raw, dtype=torch.float64).to(dtype=dtype, device=device)


def param(fixture_id: str, name: str):
    return store.json_copy(store.load_shared(fixture_id)["params"][name])
