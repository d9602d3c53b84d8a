"""Stable ids for the things a ledger mentions, and the links that point at them.

One rule for every kind: the kind, then the thing's own id, sanitised by blocks.anchor
(lower case, [a-z0-9-]). The same id therefore always gives the same anchor, on every run
and in every renderer, and a mention anywhere on the page can link to it. A gate is the
exception: its node id runs to a hundred characters and the page mentions gates thousands
of times, so it enters as a short hash (as an evidence record's gate does), 0.4 MB less.
"""
from __future__ import annotations

import hashlib

from fidelity.report.blocks import Ref, anchor

KINDS = ("paper", "eq", "claim", "gate", "pert", "finding", "mutant", "evidence")
GATE_PREFIX = "tests/gates/"


def ref_id(kind: str, *ident: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"no anchor kind {kind!r}")
    if kind == "gate":
        return anchor(kind, *(_short_hash(i) for i in ident))
    return anchor(kind, *ident)


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def gate_short(gate: str) -> str:
    """A gate id without the common tests/gates/ prefix (the JSON keeps it whole)."""
    return gate[len(GATE_PREFIX):] if gate.startswith(GATE_PREFIX) else gate


def eq_ref(eq: str, title: str = "") -> Ref:
    return Ref(eq, ref_id("eq", eq), title)


def gate_ref(gate: str) -> Ref:
    return Ref(gate_short(gate), ref_id("gate", gate), gate)


def pert_ref(pid: str, title: str = "") -> Ref:
    return Ref(pid, ref_id("pert", pid), title)


def claim_ref(cid: str) -> Ref:
    return Ref(cid, ref_id("claim", cid))


def evidence_id(pid: str, gate: str) -> str:
    """The record of one gate under one perturbation (its row in Red to green). The gate enters as a short
    hash of its id: a grid links thousands of cells, and the whole node id in each would weigh megabytes."""
    return ref_id("evidence", pid, _short_hash(gate))


def mutant_id(name: str, subject: str | None = None) -> str:
    """A discovered mutant (module:key), of a third-party subject when `subject` is given."""
    return ref_id("mutant", *((subject,) if subject else ()), name)


def mutant_ref(name: str, subject: str | None = None) -> Ref:
    return Ref(name, mutant_id(name, subject))


def finding_id(subject: str, gate: str) -> str:
    """Findings about a third-party subject are grouped by the gate that failed on it."""
    return ref_id("finding", subject, gate)
