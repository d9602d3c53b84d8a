"""A gate's outcome under one perturbation: the four words every record, table and page uses.

  red_by_assertion  at least one instance failed by the gate's own assertion: the only outcome
                    that can catch a perturbation and accept a gate
  red_other         red for another reason (an ImportError, a shape error, an assert in the
                    subject, a collection error, a child that timed out or crashed): recorded,
                    never counted as caught
  survived          every instance ran and passed
  skipped           every instance that ran was skipped: nothing was checked

An `Outcome` is a `str`, so it is written to JSON and compared with what a record holds as is.
"""
from __future__ import annotations

from enum import Enum


class Outcome(str, Enum):
    RED_BY_ASSERTION = "red_by_assertion"
    RED_OTHER = "red_other"
    SURVIVED = "survived"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value

    __hash__ = str.__hash__  # equal to its value, so it must hash like it: {"survived": ...}[Outcome.SURVIVED]

    @property
    def words(self) -> str:
        """How a sentence says it: "red by assertion", "red for another reason", ..."""
        return _WORDS[self]

    @property
    def green(self) -> bool:
        """Green for a baseline or a green-after run: it ran and nothing went red."""
        return self in (Outcome.SURVIVED, Outcome.SKIPPED)


_WORDS = {Outcome.RED_BY_ASSERTION: "red by assertion", Outcome.RED_OTHER: "red for another reason",
          Outcome.SURVIVED: "survived", Outcome.SKIPPED: "skipped"}
