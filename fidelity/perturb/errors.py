"""What stops a perturbation run before any child runs: the input is wrong.

Observed failures (a red baseline, a flaky gate, an unseen forced failure, a
source file changed on disk) are not exceptions: they come back in the
RunResult with `ok=False` and `error` set, with what was observed.
"""
from __future__ import annotations


class PerturbError(Exception):
    """Base of the runner's input errors (the CLI prints the message and exits non-zero)."""


class PatchError(PerturbError):
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


class TargetNotFound(PerturbError):
    """A perturbation's target module cannot be found, or has no Python source."""


class InvalidPerturbation(PerturbError):
    """A perturbation dict lacks a field or has one of the wrong type."""


class UnknownGate(PerturbError):
    """A perturbation lists a gate the gate index does not know."""


class GateCollectionError(PerturbError):
    """The gate suite cannot be collected."""
