"""A subject: one implementation under test, described for the gates and the runner."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from .interfaces import MECHANISMS


class NotRun(NotImplementedError):
    """A subject cannot drive this feature (a dtype, a route, a parameter): the gate instance
    is reported as NOT RUN with this reason, never passed and never failed. Subjects raise
    this, not a bare NotImplementedError, so that torch's own NotImplementedError (an op
    missing on a device) stays what it is: red for another reason."""


@dataclass(frozen=True)
class Subject:
    """One implementation under test.

    name               short id printed in the run header ("torch", "triton", ...)
    description        one line for the report
    mechanisms         mechanism name (see interfaces.MECHANISMS) -> callable or module factory
    backward_routes    mechanism name -> the gradient routes it supports, e.g. ("autograd", "manual")
    unavailable_reason returns None when the subject can run here, else why it cannot
    modules            mechanism name -> the importable modules whose source implements it; the
                       perturbation runner uses this to find the gates that cover a patched module
    """

    name: str
    description: str
    mechanisms: Mapping[str, Callable]
    backward_routes: Mapping[str, tuple[str, ...]]
    unavailable_reason: Callable[[], str | None]
    modules: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.mechanisms) - set(MECHANISMS))
        if unknown:
            raise ValueError(f"subject {self.name!r}: unknown mechanisms {unknown}; known: {tuple(MECHANISMS)}")
        missing_routes = sorted(set(self.mechanisms) - set(self.backward_routes))
        if missing_routes:
            raise ValueError(f"subject {self.name!r}: no backward routes declared for {missing_routes}")

    def available(self) -> bool:
        return self.unavailable_reason() is None

    def supports(self, mechanism: str, backward: str | None = None) -> bool:
        if mechanism not in self.mechanisms:
            return False
        return backward is None or backward in self.backward_routes.get(mechanism, ())

    def get(self, mechanism: str) -> Callable:
        """The callable or factory for `mechanism`; NotImplementedError if this subject lacks it."""
        try:
            return self.mechanisms[mechanism]
        except KeyError:
            raise NotRun(f"subject {self.name!r} does not implement {mechanism!r}") from None
