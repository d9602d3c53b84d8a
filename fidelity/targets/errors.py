"""What makes a target unusable as written: it cannot be found, or an edit does not apply."""
from __future__ import annotations


class TargetError(Exception):
    """Base of the target errors (the CLI prints the message and exits non-zero)."""


class PatchError(TargetError):
    """A perturbation's patch cannot be applied as written (evidence rule 3)."""

    def __init__(self, perturbation_id: str, file: str, pattern: str | None, count: int | None, reason: str):
        self.perturbation_id = perturbation_id
        self.file = file
        self.pattern = pattern
        self.count = count
        self.reason = reason
        msg = f"perturbation {perturbation_id}: {file}: {reason}"
        if pattern is not None:
            msg += f"; pattern {pattern!r}"
        super().__init__(msg)


class TargetNotFound(TargetError):
    """A perturbation's target module cannot be found, or has no Python source."""
