"""Forward-only module packages, one per module mechanism: the reference's modules whose forward runs
under torch.no_grad() (no gradient leaves them, as from a package that computes in NumPy or ships an
inference kernel), declared Capability(backward=("none",)) as the README says.

EVERY provides every module mechanism (one package, one `check --subject` run): every forward gate of each
should run and pass, no gradient gate should run, and each instance left out should say why. Its
mhc_residual constructor takes no `sinkhorn_backward=` (no Sinkhorn backward, so no route to name). NEVER_RESET
is mhc_residual with a call counter it never resets: state between calls, which the statelessness gate's
forward instances must label.
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


def _without_a_route_keyword(module_class: type) -> type:
    """`module_class`, whose constructor takes no `sinkhorn_backward=`, as a package with no Sinkhorn
    backward has none: the gates must not ask it for a route."""
    class NoRoute(module_class):
        def __init__(self, *args, **kwargs):
            if "sinkhorn_backward" in kwargs:
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument 'sinkhorn_backward'")
            super().__init__(*args, **kwargs)

    NoRoute.__name__ = NoRoute.__qualname__ = module_class.__name__
    return NoRoute


def _counting(module_class: type) -> type:
    """`module_class`, counting its calls in an attribute it never resets."""
    class Counting(module_class):
        def forward(self, *args, **kwargs):
            self.calls = getattr(self, "calls", 0) + 1
            return super().forward(*args, **kwargs)

    Counting.__name__ = Counting.__qualname__ = f"Counting{module_class.__name__}"
    return Counting


FACTORIES = {"hyper_connection": "HyperConnection", "mhc_residual": "MhcResidual", "block_attnres": "BlockAttnRes",
             "loop_model": "LoopModel", "mhc_stack": "MhcStack", "hc_stack": "HcStack"}


def _subject(name: str, factories: dict[str, str], *, wrap=lambda cls: cls) -> Subject:
    import fidelity.impl.torch as reference

    def built(mechanism: str, factory: str) -> type:
        module_class = _forward_only(wrap(getattr(reference, factory)))
        return _without_a_route_keyword(module_class) if mechanism == "mhc_residual" else module_class

    return Subject(name=name, description=f"{', '.join(factories.values())} with their forward under no_grad",
                   mechanisms={m: built(m, f) for m, f in factories.items()},
                   capabilities={m: FORWARD_ONLY for m in factories}, unavailable_reason=lambda: None,
                   modules={m: ("fidelity.impl.torch",) for m in factories})


EVERY = _subject("forward-only-modules", FACTORIES)
NEVER_RESET = _subject("forward-only-never-reset", {"mhc_residual": "MhcResidual"}, wrap=_counting)
