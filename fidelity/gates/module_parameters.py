"""A module's parameters by the names its mechanism's interface gives, read or written by the gates.

Names may be dotted (`layer_norm.weight`). A module that lacks one is not judged on it: NotRun
names the parameter and the mechanism (an adapter that cannot expose it is not run, never failed).
"""
from __future__ import annotations

from typing import Iterable, Mapping

import torch

from fidelity.mechanisms.refusal import NotRun


def parameter(module: torch.nn.Module, name: str, mechanism: str) -> torch.Tensor:
    """The module's tensor at the interface's (dotted) `name`; NotRun if it has none."""
    obj = module
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise NotRun(f"the module has no {name!r} (a parameter of the {mechanism} interface)")
    if not isinstance(obj, torch.Tensor):
        raise NotRun(f"the module's {name!r} is a {type(obj).__name__}, not a tensor ({mechanism} interface)")
    return obj


def parameters(module: torch.nn.Module, names: Iterable[str], mechanism: str) -> dict[str, torch.Tensor]:
    """{name: tensor} for every name, in the order given; NotRun naming the first one missing."""
    return {name: parameter(module, name, mechanism) for name in names}


def write_parameters(module: torch.nn.Module, values: Mapping[str, torch.Tensor], mechanism: str
                     ) -> dict[str, torch.Tensor]:
    """Copy each value into the module's parameter of that name (without recording a gradient); returns them."""
    found = parameters(module, values, mechanism)
    with torch.no_grad():
        for name, value in values.items():
            found[name].copy_(value)
    return found
