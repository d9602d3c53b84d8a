"""Forward-only module packages, one per module mechanism: the reference's modules whose forward runs
under torch.no_grad() (no gradient leaves them, as from a package that computes in NumPy or ships an
inference kernel), declared Capability(backward=("none",)) as the README says.

HC, MHC, BLOCK, LOOP and STACK each provide one mechanism; every forward gate of it should run and
pass, no gradient gate should run, and each instance left out should say why. NEVER_RESET is MHC
with a call counter it never resets: state between calls, which the statelessness gate's forward
instances must label.
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, Subject

FORWARD_ONLY = Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("none",))


def _forward_only(module_class: type) -> type:
    """`module_class`, whose forward gives no gradient; constructor, parameters and methods as shipped."""
    class ForwardOnly(module_class):
        def forward(self, *args, **kwargs):
            with torch.no_grad():
                return super().forward(*args, **kwargs)

    ForwardOnly.__name__ = ForwardOnly.__qualname__ = f"ForwardOnly{module_class.__name__}"
    return ForwardOnly


def _counting(module_class: type) -> type:
    """`module_class`, counting its calls in an attribute it never resets."""
    class Counting(module_class):
        def forward(self, *args, **kwargs):
            self.calls = getattr(self, "calls", 0) + 1
            return super().forward(*args, **kwargs)

    Counting.__name__ = Counting.__qualname__ = f"Counting{module_class.__name__}"
    return Counting


def _subject(mechanism: str, factory_name: str, *, wrap=lambda cls: cls) -> Subject:
    import fidelity.impl.torch as reference

    return Subject(name=f"forward-only-{mechanism}", description=f"{factory_name} with its forward under no_grad",
                   mechanisms={mechanism: _forward_only(wrap(getattr(reference, factory_name)))},
                   capabilities={mechanism: FORWARD_ONLY}, unavailable_reason=lambda: None,
                   modules={mechanism: ("fidelity.impl.torch",)})


HC = _subject("hyper_connection", "HyperConnection")
MHC = _subject("mhc_residual", "MhcResidual")
BLOCK = _subject("block_attnres", "BlockAttnRes")
LOOP = _subject("loop_model", "LoopModel")
STACK = _subject("mhc_stack", "MhcStack")
NEVER_RESET = _subject("mhc_residual", "MhcResidual", wrap=_counting)
