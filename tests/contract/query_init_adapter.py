"""An adapter for a Block AttnRes package whose pseudo-queries start at a fixed non-zero value (0.02, the
std many transformer codes initialise vectors with) instead of zero (AttnRes §5). The package is stood in
for by the reference module with its queries filled after construction; its names and interface are the
reference's, so every gate can drive it and only what the fixed init changes can go red.
"""
from __future__ import annotations

import torch

from fidelity.impl.torch import BlockAttnRes
from fidelity.subjects.subject import Capability, Subject

FIXED_QUERY_INIT = 0.02


def block_attnres(*args, **kwargs):
    module = BlockAttnRes(*args, **kwargs)
    with torch.no_grad():
        module.queries.fill_(FIXED_QUERY_INIT)
        module.output_query.fill_(FIXED_QUERY_INIT)
    return module


SUBJECT = Subject(
    name="fixed-query",
    description="Block AttnRes with pseudo-queries initialised at 0.02",
    mechanisms={"block_attnres": block_attnres},
    capabilities={"block_attnres": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",))},
    unavailable_reason=lambda: None,
)
