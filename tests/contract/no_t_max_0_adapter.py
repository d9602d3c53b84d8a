"""A Sinkhorn that cannot be asked for t_max = 0 (a package that always iterates at least once).

t_max = 0 is valid (Eq. 9: M(0) = exp(logits)), so the package raises NotRun for it; every other
call is our reference's. Its refusals (non-square logits, a negative t_max) are still the
reference's and must still be checked: a NotRun for a valid edge case costs that case alone.
"""
from __future__ import annotations

import torch

from fidelity.impl.torch.sinkhorn import sinkhorn as _reference
from fidelity.subjects.subject import Capability, NotRun, Subject


def sinkhorn(logits: torch.Tensor, *, t_max: int = 20, backward: str = "autograd") -> torch.Tensor:
    if t_max == 0:
        raise NotRun("this package always iterates at least once: t_max = 0 cannot be asked of it")
    return _reference(logits, t_max=t_max, backward=backward)


def _sinkhorn_subject(name: str, description: str, fn) -> Subject:
    """Our reference Sinkhorn's capability and source, behind `fn`."""
    return Subject(name=name, description=description, mechanisms={"sinkhorn": fn},
                   capabilities={"sinkhorn": Capability(dtypes=("float32", "float64"), devices=("cpu", "cuda"),
                                                        backward=("autograd", "manual"))},
                   unavailable_reason=lambda: None, modules={"sinkhorn": ("fidelity.impl.torch.sinkhorn",)})


SUBJECT = _sinkhorn_subject("no-t-max-0", "our reference Sinkhorn, with t_max = 0 not run", sinkhorn)


def sinkhorn_accepting_a_negative_t_max(logits: torch.Tensor, *, t_max: int = 20, backward: str = "autograd") -> torch.Tensor:
    """A package that clamps t_max at 0 rather than refusing a negative one: a finding of the refusal gate."""
    return _reference(logits, t_max=max(t_max, 0), backward=backward)


ACCEPTS_NEGATIVE_T_MAX = _sinkhorn_subject("negative-t-max-accepted",
                                           "our reference Sinkhorn, with a negative t_max run as 0",
                                           sinkhorn_accepting_a_negative_t_max)


def mhc_stack_from_width_2(d, bodies, *, dtype=torch.float32, device=None):
    """A stack package that cannot build width 1 (a kernel tiled by 2): NotRun there; every other call is ours."""
    from fidelity.impl.torch import MhcStack

    if d == 1:
        raise NotRun("this package's kernel needs an even width: width 1 cannot be asked of it")
    return MhcStack(d, bodies, dtype=dtype, device=device)


NO_WIDTH_1_STACK = Subject(
    name="no-width-1-stack",
    description="our reference mHC stack, with width 1 not run",
    mechanisms={"mhc_stack": mhc_stack_from_width_2},
    capabilities={"mhc_stack": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",),
                                          streams="replicated")},
    unavailable_reason=lambda: None,
    modules={"mhc_stack": ("fidelity.impl.torch.mhc_stack", "fidelity.impl.torch.mhc")},
)
