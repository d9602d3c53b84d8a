"""An adapter for statefulpkg (tests/contract/statefulpkg: objects that keep state between calls), written from
its README alone, as a user writes one.

COUNTING     the sinkhorn mechanism over one SinkhornProjection the adapter keeps at module level: an
             iteration counter never reset (a reused object degrades after 1000 iterations in all)
WORKSPACE    the sinkhorn mechanism over one WorkspaceSinkhorn, declaring the diagnostics buffer it keeps
             (Capability.keeps_state): state on purpose, said, not counted
UNDECLARED_WORKSPACE  the same, not declared: a buffer the first call allocates is state like any other
MEMOISING    the mhc_stack mechanism over statefulpkg.MemoStack, forward only (an inference stack): its
             first output per input shape, returned for every later input of that shape
"""
from __future__ import annotations

import torch

import statefulpkg
from fidelity.subjects.subject import Capability, Subject

_COUNTING = statefulpkg.SinkhornProjection()
_WORKSPACE = statefulpkg.WorkspaceSinkhorn()
_UNDECLARED_WORKSPACE = statefulpkg.WorkspaceSinkhorn()


def _checked_route(backward: str) -> None:
    if backward != "autograd":
        raise ValueError(f"unknown backward route {backward!r}: statefulpkg differentiates with autograd")


def counting_sinkhorn(logits: torch.Tensor, t_max: int = 20, *, backward: str = "autograd") -> torch.Tensor:
    _checked_route(backward)
    return _COUNTING(logits, iterations=t_max)


def workspace_sinkhorn(logits: torch.Tensor, t_max: int = 20, *, backward: str = "autograd") -> torch.Tensor:
    _checked_route(backward)
    return _WORKSPACE(logits, iterations=t_max)


def undeclared_workspace_sinkhorn(logits: torch.Tensor, t_max: int = 20, *, backward: str = "autograd") -> torch.Tensor:
    _checked_route(backward)
    return _UNDECLARED_WORKSPACE(logits, iterations=t_max)


def memo_stack(d, bodies, *, dtype=torch.float32, device=None):
    return statefulpkg.MemoStack(d, list(bodies), streams=4).to(dtype=dtype, device=device)


def _sinkhorn_subject(name: str, fn, **capability) -> Subject:
    return Subject(
        name=name, description=f"statefulpkg behind the sinkhorn interface ({fn.__name__})",
        mechanisms={"sinkhorn": fn},
        capabilities={"sinkhorn": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",),
                                             **capability)},
        unavailable_reason=lambda: None, modules={"sinkhorn": ("statefulpkg",)})


COUNTING = _sinkhorn_subject("statefulpkg-counting", counting_sinkhorn)
WORKSPACE = _sinkhorn_subject("statefulpkg-workspace", workspace_sinkhorn, keeps_state={
    "*._workspace": "statefulpkg writes each result's column sums into a buffer per shape, for diagnostics; "
                    "the projection never reads it"})
UNDECLARED_WORKSPACE = _sinkhorn_subject("statefulpkg-workspace-undeclared", undeclared_workspace_sinkhorn)
MEMOISING = Subject(
    name="statefulpkg-memo", description="statefulpkg.MemoStack behind the mhc_stack interface (inference only)",
    mechanisms={"mhc_stack": memo_stack},
    capabilities={"mhc_stack": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("none",),
                                          streams="replicated")},
    unavailable_reason=lambda: None, modules={"mhc_stack": ("statefulpkg",)})
