"""Check each claim of the specs against its oracle: confirmed, refuted or unchecked.

A claim is a number a source document states. Its verdict comes from
fidelity.oracles.quantities.compare_claim (the stated number must agree with
the oracle to within half a unit of its last stated digit). A claim without an
oracle is 'unchecked', never 'confirmed'. An oracle name that does not exist is
an 'error': the spec points at nothing.
"""
from __future__ import annotations

from fidelity.spec import Catalogue, Item


def check_claim(item: Item) -> dict:
    from fidelity.oracles.quantities import QUANTITIES, compare_claim

    data = item.data
    row = {"id": item.id, "paper": item.paper, "stated": data["value"], "oracle": data.get("oracle"),
           "source": f"{data['source']['file']} {data['source']['section']}", "computed": None,
           "difference": None, "verdict": "unchecked", "note": data.get("unchecked_reason", "no oracle")}
    name = data.get("oracle")
    if not name:
        return row
    if name not in QUANTITIES:
        row.update(verdict="error", note=f"oracle {name!r} is not a known quantity ({item.file}:{item.line})")
        return row
    result = compare_claim(data["value"], QUANTITIES[name].fn())
    row.update(verdict=result["verdict"].lower(), computed=result["computed"],
               difference=result["difference"], note=QUANTITIES[name].description)
    return row


def check_claims(cat: Catalogue) -> list[dict]:
    return [check_claim(item) for item in cat.claims.values()]
