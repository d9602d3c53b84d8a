"""What stops a perturbation run before any child runs: the input is wrong.

Observed failures (a red baseline, a flaky gate, an unseen forced failure, a
source file changed on disk) are not exceptions: they come back in the
RunResult with `ok=False` and `error` set, with what was observed.
"""
from __future__ import annotations


class PerturbError(Exception):
    """Base of the runner's input errors (the CLI prints the message and exits non-zero; it catches
    TargetError, a target that cannot be found or patched, beside it)."""


class InvalidPerturbation(PerturbError):
    """A perturbation dict lacks a field or has one of the wrong type."""


class UnknownGate(PerturbError):
    """A perturbation lists a gate the gate index does not know."""


class GateCollectionError(PerturbError):
    """The gate suite cannot be collected."""


class ExecutorUnavailable(PerturbError):
    """The executor asked for cannot run here: Ray is not installed, or its cluster cannot be reached."""
