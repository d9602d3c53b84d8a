"""An mHC block with only the paper's replicated layout, which also builds at width 0 (issue 51, attribution).

WIDTH_ZERO wraps the project's MhcResidual as a package might: layout="sliced" is refused with NotRun (the
package has no such layout), and a width C = 0 is quietly built at width 1 instead of refused. The width
acceptance is a finding about the width (mhc.eq3), never about the sliced layout the package does not have.
"""
from __future__ import annotations

import torch

from fidelity.mechanisms.refusal import NotRun
from fidelity.subjects.subject import Capability, Subject


def _replicated_only(n, C, *, layout="paper", **options):
    from fidelity.impl.torch.mhc import MhcResidual

    if layout == "sliced":
        raise NotRun("this package has only the paper's replicated layout")
    return MhcResidual(n, max(C, 1), layout=layout, **options)  # the shortcut: width 0 built as width 1


WIDTH_ZERO = Subject(
    name="replicated-only-width-zero",
    description="MhcResidual without the sliced layout, building width 0 as width 1",
    mechanisms={"mhc_residual": _replicated_only},
    capabilities={"mhc_residual": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",))},
    unavailable_reason=lambda: None,
    modules={"mhc_residual": ("fidelity.impl.torch.mhc", "fidelity.impl.torch.sinkhorn", "fidelity.impl.torch.rmsnorm")},
)
