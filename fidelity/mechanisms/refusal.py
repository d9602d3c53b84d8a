"""The one refusal type: what a subject cannot drive is NotRun, never a bare NotImplementedError."""
from __future__ import annotations


class NotRun(NotImplementedError):
    """A subject cannot drive this feature (a dtype, a device, a route, a parameter): the gate
    instance is reported as NOT RUN with this message as the reason, never passed and never
    failed. Raise this, not a bare NotImplementedError, so that torch's own
    NotImplementedError (an op missing on a device) stays what it is: red for another reason.

    >>> import torch
    >>> from fidelity.mechanisms import NotRun
    >>> def softmax(z: torch.Tensor) -> torch.Tensor:
    ...     if z.dtype == torch.float16:
    ...         raise NotRun("this kernel has no float16 path")
    ...     return z.softmax(-1)
    >>> softmax(torch.zeros(2, dtype=torch.float16))
    Traceback (most recent call last):
    ...
    fidelity.mechanisms.refusal.NotRun: this kernel has no float16 path
    """
