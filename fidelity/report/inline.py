"""Inline pieces the ledger's sections (and gatematrix) share: numbers as the page shows them,
comma-joined mentions of gates, equations and perturbations, and the outcome tags.
"""
from __future__ import annotations

from fidelity.evidence.outcome import Outcome
from fidelity.report.anchors import eq_ref, gate_ref, pert_ref
from fidelity.report.blocks import Code, Num, Tag

DASH = "—"


def num(x, digits: int = 6) -> str:
    if x is None:
        return DASH
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}g}"


def yes_no(x) -> str:
    return DASH if x is None else ("yes" if x else "no")


def codes(items, empty=DASH) -> object:
    items = list(items)
    if not items:
        return empty
    out = []
    for i, it in enumerate(items):
        if i:
            out.append(", ")
        out.append(Code(it))
    return tuple(out)


def joined(items, empty=DASH) -> object:
    """Inline items separated by commas."""
    out = []
    for i, it in enumerate(items):
        out += [", ", it] if i else [it]
    return tuple(out) if out else empty


def gate_codes(gates, empty=DASH):
    return joined([gate_ref(g) for g in gates], empty)


def eq_refs(eqs, empty=DASH):
    return joined([eq_ref(e) for e in eqs], empty)


def pert_refs(pids, empty=DASH):
    return joined([pert_ref(p) for p in pids], empty)


def reading(x, digits: int = 9):
    """A reading to 4 significant digits on the page, every digit (`digits`) on hover and in Markdown."""
    if not isinstance(x, float):
        return num(x, digits)
    return Num(num(x, 4), num(x, digits))


_OUTCOME_TAG = {o: (o.words, kind) for o, kind in ((Outcome.RED_BY_ASSERTION, "red"), (Outcome.RED_OTHER, "other"),
                                                 (Outcome.SURVIVED, "survived"), (Outcome.SKIPPED, "skipped"))}


def outcome_tag(outcome: str | None):
    if outcome is None:
        return DASH
    text, kind = _OUTCOME_TAG.get(outcome, (outcome, "other"))
    return Tag(text, kind)
