"""A probe: one public entry of a module called with generated inputs, and what one call of it does.

Its own module because both kinds of probe build on it: equivalence.py makes the probes of
functions and module_probes.py those of module classes, and equivalence.py gathers both.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from fidelity.gates.tensors import floating_tensors

# smallest first: the first difference found is then at the smallest size that shows it
SIZES = ({"n": 2, "L": 2, "d": 2, "C": 1, "N": 1, "T": 1}, {"n": 3, "L": 3, "d": 4, "C": 2, "N": 2, "T": 2})
REFUSALS = ("ValueError", "TypeError")  # what the contract says a subject raises on input outside it


@dataclass
class Probe:
    """One public entry called with generated inputs: `make(seed, sizes) -> (args, kwargs)` per variant,
    or, with `behaviour`, `make` returns whatever input `behaviour(module, input, seed)` runs on one side."""

    entry: str                                   # qualified name in the module (the witness names it)
    variants: dict[str, Callable[[int, dict], Any]] = field(default_factory=dict)
    behaviour: Callable[[types.ModuleType, Any, int], Any] | None = None

    def run(self, module: types.ModuleType, inputs: Any, seed: int):
        if self.behaviour is not None:
            return self.behaviour(module, inputs, seed)
        return _call_behaviour(resolve(module, self.entry), *inputs, seed)


class NoProbe(Exception):
    """An input this probe cannot build (a shape it cannot read, a required argument it cannot make)."""


def resolve(module: types.ModuleType, qualname: str):
    """The object a qualified name ('Class.method') names in `module`."""
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def random_tensor(shape: list[int], generator: torch.Generator) -> torch.Tensor:
    """A float64 leaf of `shape` drawn from `generator` (spread wider than unit normal)."""
    return (torch.randn(tuple(shape), generator=generator, dtype=torch.float64) * 1.5).requires_grad_(True)


def _call_behaviour(fn: Callable, args: list, kwargs: dict, seed: int) -> list[torch.Tensor] | str:
    """The outputs and gradients of one call, or the name of the exception it raised: refusing an
    input is behaviour too (a guard a mutant removed accepts what the original refuses)."""
    try:
        return _outputs_and_grads(fn, *_fresh(args, kwargs), seed)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _outputs_and_grads(fn: Callable, args: list, kwargs: dict, seed: int) -> list[torch.Tensor]:
    out = fn(*args, **kwargs)
    outs = list(floating_tensors(out))
    leaves = [t for t in [*args, *kwargs.values()] if isinstance(t, torch.Tensor) and t.requires_grad]
    results = [t.detach().clone() for t in outs]
    differentiable = [t for t in outs if t.requires_grad]
    if differentiable and leaves:
        g = torch.Generator().manual_seed(10_000 + seed)
        loss = sum((t * torch.randn(t.shape, generator=g, dtype=t.dtype)).sum() for t in differentiable)
        grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        results += [torch.zeros_like(x) if gr is None else gr.detach() for x, gr in zip(leaves, grads)]
    return results


def _fresh(args: list, kwargs: dict) -> tuple[list, dict]:
    copy = lambda t: t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t  # noqa: E731
    return [copy(a) for a in args], {k: copy(v) for k, v in kwargs.items()}
