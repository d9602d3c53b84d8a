"""Our choices: when a difference found in someone else's code is a difference from a value the paper never states.

A spec item of tier c records a choice the paper does not make (an epsilon it never states, an init, a
parameter layout). Our own reference is held to it; another implementation that chose differently has not
departed from the paper, and calling that a finding would blame the package for our decision.

The rule, in one place (`fidelity check --subject`'s verdicts and the ledger's third-party cells both ask it):
a failed assertion differs from our choice only when EVERY equation it is attributed to is tier c. The
attribution is the gate's: its marker's equations, or the narrower set a `checking(...)` block names
(fidelity.gates.attribution). A gate that holds a paper equation and a choice in one comparison cannot tell
which of them the package departed from, so its failure stays a finding; a gate that means to separate them
compares the choice in its own `checking("<tier-c item>")` block.
"""
from __future__ import annotations

from typing import Iterable

CHOICE_TIER = "c"


def our_choices(cat, equations: Iterable[str]) -> list:
    """The tier-c items a failure attributed to `equations` differs from, when every one of them is tier c;
    [] when any is a paper statement (tier a or b) or unknown to the catalogue."""
    items = [cat.equations.get(e) for e in dict.fromkeys(equations)]
    if not items or any(item is None or item.get("tier") != CHOICE_TIER for item in items):
        return []
    return items


def describe(item) -> dict:
    """What a report says of a choice: the item, its tier, our value (None where the item states no single
    value) and its title."""
    value = item.get("value")
    return {"id": item.id, "tier": item.get("tier"), "ours": None if value is None else str(value),
            "title": item.get("title")}
