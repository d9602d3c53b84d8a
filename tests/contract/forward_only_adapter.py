"""An adapter for npbalance (tests/contract/npbalance, NumPy, forward only), written from the README's
"Someone else's implementation" alone: the sinkhorn interface without `backward=`, and
Capability(backward=("none",)), so the forward gates run on it and the gradient gates do not.

SUBJECT wraps npbalance.scale (Eq. 9 as written). NEVER_RESET wraps the package's warm-started
path, whose state lives from one call to the next: the statelessness gate must label it.
DEPTH_ATTENTION stands for a forward-only depth attention: the reference's forward run under
torch.no_grad(), so no gradient leaves it, behind the depth_attention interface without `backward=`.
"""
from __future__ import annotations

import torch

from fidelity.subjects.subject import Capability, Subject


def _as_numpy(logits: torch.Tensor):
    return logits.detach().numpy()  # the package's own dtype: float32 stays float32


def sinkhorn(logits: torch.Tensor, *, t_max: int = 20) -> torch.Tensor:
    import npbalance  # lazily: loading this file never fails

    return torch.from_numpy(npbalance.scale(_as_numpy(logits), t_max))  # Eq. 9: column, then row


def sinkhorn_never_reset(logits: torch.Tensor, *, t_max: int = 20) -> torch.Tensor:
    import npbalance

    return torch.from_numpy(npbalance.scale_warm(_as_numpy(logits), t_max))


def depth_attention(sources: torch.Tensor, query: torch.Tensor, *, convention: str = "paper", eps: float = 1e-6,
                    gain: torch.Tensor | None = None):
    from fidelity.impl.torch import depth_attend

    with torch.no_grad():
        return depth_attend(sources, query, convention=convention, eps=eps, gain=gain)


def _unavailable() -> str | None:
    try:
        import npbalance  # noqa: F401
    except ImportError as exc:
        return f"npbalance does not import: {exc}"
    return None


def _subject(name: str, fn) -> Subject:
    return Subject(
        name=name,
        description=f"npbalance behind the sinkhorn interface, forward only ({fn.__name__})",
        mechanisms={"sinkhorn": fn},
        capabilities={"sinkhorn": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("none",))},
        unavailable_reason=_unavailable,
        modules={"sinkhorn": ("npbalance",)},
    )


SUBJECT = _subject("npbalance", sinkhorn)
NEVER_RESET = _subject("npbalance-warm", sinkhorn_never_reset)
DEPTH_ATTENTION = Subject(
    name="no-grad-depth",
    description="a forward-only depth attention (the reference's forward under torch.no_grad)",
    mechanisms={"depth_attention": depth_attention},
    capabilities={"depth_attention": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("none",))},
    unavailable_reason=lambda: None,
)
