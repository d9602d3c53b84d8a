"""The same outputs in training and in evaluation mode, where the paper has no mode-dependent part.

A module whose `eval()` takes another path (a cached mixing matrix, fewer Sinkhorn steps, the
static coefficients only, a cheaper kernel) computes something else at inference than what every
gate measured: a fresh module is in training mode and the other gates never switch it.
None of the mechanisms here has a mode-dependent part (no dropout, no batch statistics), so
`assert_same_in_train_and_eval` calls the gate's call

- T  with every module in training mode (the first call may set itself up: nothing compared yet),
- T  again, the reference;
- E  with every module in evaluation mode, which must give the reference bit for bit;
- T  once more after E, which must too (an eval path that leaves a cache training then reads);

and puts each submodule back in the mode it was in. The reading counts the results that differ
from the reference; it must be 0.
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from fidelity.gates.compare import assert_bound
from fidelity.gates.statelessness import LISTED, floating_results, result_differences


def assert_same_in_train_and_eval(call: Callable[[], object], *, modules: Mapping[str, torch.nn.Module],
                                  what: str) -> int:
    """T, T, E, T (see the module docstring): 0 differences from the second T, or a GateFailure naming each.

    `call` is the gate's call on the subject's module (a closure over it and its inputs); `modules` the
    nn.Modules it holds, by name, every submodule of which is switched; `what` names the call in the message.

    >>> import torch
    >>> from fidelity.gates.train_eval import assert_same_in_train_and_eval
    >>> x = torch.tensor([1.0, 2.0])
    >>> linear = torch.nn.Linear(2, 2)
    >>> assert_same_in_train_and_eval(lambda: linear(x), modules={"linear": linear}, what="linear")
    0.0
    >>> dropped = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
    >>> assert_same_in_train_and_eval(lambda: dropped(x), modules={"m": dropped}, what="with dropout")
    Traceback (most recent call last):
    ...
    fidelity.gates.compare.GateFailure: with dropout: the same call in training mode, in eval mode, in training mode again: ... reading=...
    """
    if not modules:
        raise ValueError(f"{what}: no module to switch between training and evaluation mode")
    was = {(name, path): sub.training for name, module in modules.items() for path, sub in module.named_modules()}
    try:
        _set_mode(modules, training=True)
        call()
        reference = floating_results(call())
        if not reference:
            raise ValueError(f"{what}: the call returned no floating tensor to compare")
        _set_mode(modules, training=False)
        found = [f"eval: {d}" for d in result_differences(reference, floating_results(call()))]
        _set_mode(modules, training=True)
        found += [f"train after eval: {d}" for d in result_differences(reference, floating_results(call()))]
    finally:
        for name, module in modules.items():
            for path, sub in module.named_modules():
                sub.training = was[(name, path)]
    listed = "; ".join(found[:LISTED]) + (f"; and {len(found) - LISTED} more" if len(found) > LISTED else "")
    return assert_bound(len(found), at_most=0, reading_name="reading",
                        what=f"{what}: the same call in training mode, in eval mode, in training mode again: "
                             f"{len(found)} difference(s) from the training-mode results{': ' + listed if found else ''}")


def _set_mode(modules: Mapping[str, torch.nn.Module], *, training: bool) -> None:
    for module in modules.values():
        module.train(training)
