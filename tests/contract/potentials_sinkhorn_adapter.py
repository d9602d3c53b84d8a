"""A Sinkhorn written as log-domain packages write it (POT's sinkhorn_log, hyper-connections'
log_domain_sinkhorn_knopps): dual potentials g (columns) then f (rows), t_max times, and M(t_max) =
exp(logits + f + g). These are Eq. 9's iterates exactly, rounded otherwise than our reference, which
subtracts each logsumexp from the iterate itself: a faithful package, which no gate may call a finding."""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, NotRun, Subject


def sinkhorn(logits: torch.Tensor, *, t_max: int = 20, backward: str = "autograd") -> torch.Tensor:
    if backward == "manual":
        raise NotRun("this package has no hand-written backward")
    if backward != "autograd":
        raise ValueError(f"unknown backward route {backward!r}; expected 'autograd' or 'manual'")
    if logits.dim() < 2 or logits.shape[-1] != logits.shape[-2]:
        raise ValueError(f"logits must be [..., n, n], got shape {tuple(logits.shape)}")
    if t_max < 0:
        raise ValueError(f"t_max must be >= 0, got {t_max}")
    f = torch.zeros_like(logits[..., :, :1])  # row potentials
    g = torch.zeros_like(logits[..., :1, :])  # column potentials
    for _ in range(t_max):
        g = -torch.logsumexp(logits + f, dim=-2, keepdim=True)  # columns sum to 1
        f = -torch.logsumexp(logits + g, dim=-1, keepdim=True)  # then rows
    return torch.exp(logits + f + g)


SUBJECT = Subject(
    name="potentials",
    description="Eq. 9 by dual potentials, M = exp(logits + f + g), as POT and hyper-connections write it",
    mechanisms={"sinkhorn": sinkhorn},
    capabilities={"sinkhorn": Capability(dtypes=("float32", "float64"), devices=("cpu", "cuda"),
                                         backward=("autograd",))},
    unavailable_reason=lambda: None,
    modules={"sinkhorn": ("potentials_sinkhorn_adapter",)},
)
