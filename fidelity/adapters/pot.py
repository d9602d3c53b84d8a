"""Adapter: POT, Python Optimal Transport (PyPI `pot`, module `ot`), as an independent Sinkhorn.

Mechanism:
    sinkhorn   ot.sinkhorn(a, b, M, reg, method="sinkhorn_log", numItermax=t_max, stopThr=0.0, warn=False)
               (dispatches to ot.bregman._sinkhorn.sinkhorn_log), one call per matrix

How mHC Eq. 9 maps onto entropic OT. POT solves min_P <P, M> + reg sum P log P subject to
P 1 = a, P^T 1 = b; its log-domain Sinkhorn keeps potentials (u, v) and returns
P = exp(-M / reg + u 1^T + 1 v^T) = diag(e^u) exp(-M/reg) diag(e^v). With

    a = b = 1 (ones, so log a = log b = 0 exactly),  M = -logits,  reg = 1,

-M / reg is the logits exactly (a negation and a division by 1), and P has unit row and
column sums at convergence: the doubly stochastic scaling of exp(logits) that Eq. 9 targets.
No rescaling of the output is needed or done.

Iteration order. Each POT iteration (ot/bregman/_sinkhorn.py, sinkhorn_log) is
    v = log b - logsumexp_i(L + u_i)      (columns of exp(L + u + v) sum to 1: T_c)
    u = log a - logsumexp_j(L + v_j)      (rows sum to 1: T_r)
starting from u = v = 0, and the returned plan is exp(L + u + v). Any matrix reached by
normalisations is diag(r) exp(L) diag(c), and T_c (T_r) depends only on the current row (column)
scaling, so after t iterations POT's plan is EXACTLY Eq. 9's M(t) = T_r(T_c(M(t-1))),
column first, in exact arithmetic; for t = 0 it is exp(L) = M(0). What differs is rounding:
POT recomputes the plan from the potentials instead of normalising the previous iterate, and
the plan is formed once at the end (the log-sum-exps over L + u, L + v are not the same
floating-point operations as our reference's).

Stopping rule. POT checks the column marginal every 10th iteration (ii % 10 == 0) and stops
when ||P^T 1 - b||_2 < stopThr. With stopThr = 0 that test is never true (a norm is >= 0, NaN
compares false), so exactly numItermax = t_max iterations run. Its "did not converge" warning,
which then always fires, is switched off with POT's own `warn=False`; nothing is returned
differently.

Batches. sinkhorn_log takes one [n, m] cost (a 2-D `b` means several target histograms, not a
batch of costs), so [..., n, n] logits are solved one matrix at a time and stacked.

Dtypes and devices: POT's torch backend computes in the input's dtype and on its device, so
float32 and float64 both run natively. Gradients: torch autograd through POT's torch ops
("autograd"); POT has no hand-written backward for sinkhorn_log ("manual" is not run).
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, Subject

from ._common import load, require_route, unavailable

PACKAGE = "pot"
SINKHORN_MODULE = "ot.bregman._sinkhorn"
BACKEND_MODULE = "ot.backend"


def sinkhorn(logits: torch.Tensor, *, t_max: int = 20, backward: str = "autograd") -> torch.Tensor:
    """Eq. 9 as POT's log-domain entropic OT: a = b = 1, M = -logits, reg = 1, t_max iterations, no early stop."""
    require_route(PACKAGE, "sinkhorn", backward)
    ot = load("ot")
    if logits.dim() < 2:
        raise ValueError(f"logits must be [..., n, n], got shape {tuple(logits.shape)}")
    rows, cols = logits.shape[-2:]
    flat = logits.reshape(-1, rows, cols)
    a = torch.ones(rows, dtype=logits.dtype, device=logits.device)
    b = torch.ones(cols, dtype=logits.dtype, device=logits.device)
    plans = [
        ot.sinkhorn(a, b, -cost, 1.0, method="sinkhorn_log", numItermax=t_max, stopThr=0.0, warn=False)
        for cost in flat
    ]
    return torch.stack(plans).reshape(logits.shape)


SUBJECT = Subject(
    name=PACKAGE,
    description="PyPI pot (Python Optimal Transport): ot.sinkhorn(method='sinkhorn_log'), a = b = 1, M = -logits, reg = 1",
    mechanisms={"sinkhorn": sinkhorn},
    capabilities={"sinkhorn": Capability(("float32", "float64"), ("cpu", "cuda"), ("autograd",), keeps_state={
        f"{BACKEND_MODULE}:_BACKENDS": "POT builds each array backend (numpy, torch) on its first use and keeps it "
                                       "for the process"})},
    unavailable_reason=unavailable(PACKAGE, "ot", SINKHORN_MODULE),
    modules={"sinkhorn": (SINKHORN_MODULE, BACKEND_MODULE)},
)
