"""The words and keys the ledger and its renderers share: a red-to-green row's basis, which equation
statuses count as implemented, a third-party cell's statuses, and the small helpers that order and
shorten what the ledger shows.
"""
from __future__ import annotations

import re

OBSERVED, OBSERVED_STALE, PREDICTED_ONLY = "OBSERVED", "OBSERVED, STALE", "PREDICTED ONLY"
IMPLEMENTED = ("implemented", "deviates")
FINDING, ERROR, NOT_PROVIDED = "finding", "error", "not provided"   # a third-party subject's cells
CHOICE = "differs from our choice"  # a third-party cell whose every failure is a difference from a tier-c choice


def perturbation_key(pid: str):
    """P2 before P10; anything else after, by name."""
    m = re.fullmatch(r"P(\d+)", pid)
    return (0, int(m.group(1)), pid) if m else (1, 0, pid)


def where_text(where: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in where.items())


def first_sentence(text: str | None, limit: int = 240) -> str:
    text = " ".join((text or "").split())
    m = re.search(r"(?<=[.!?])\s", text)
    out = text[: m.start()] if m else text
    return out if len(out) <= limit else out[: limit - 3].rstrip() + "..."


def paper_of_equation(cat, eq: str) -> str:
    item = cat.equations.get(eq)
    return item.paper if item is not None else eq.split(".", 1)[0]


def group(entries: list[dict], key: str) -> dict[str, list[dict]]:
    """key's value -> its entries, in the entries' order (one pass: looking each one up by scanning
    all ~8,000 entries per gate and per perturbation was quadratic)."""
    out: dict[str, list[dict]] = {}
    for e in entries:
        out.setdefault(e[key], []).append(e)
    return out
