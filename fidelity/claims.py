"""Check each claim of the specs against its oracle: confirmed, refuted or unchecked.

A claim is a number a source document states. Its oracle is either a quantity name in
fidelity.oracles.quantities.QUANTITIES (this repository's papers) or `module:function`,
a function of no arguments in the project's own code returning the exact value (mpmath,
sympy, Fraction, int or float). The verdict comes from
fidelity.oracles.quantities.compare_claim (the stated number must agree with the oracle
to within half a unit of its last stated digit). A claim without an oracle is
'unchecked', never 'confirmed'. An oracle that does not resolve, or raises, is an
'error': the spec points at nothing usable.
"""
from __future__ import annotations

from typing import Callable

from fidelity import references
from fidelity.spec import Catalogue, Item


class OracleNotFound(Exception):
    pass


def resolve_oracle(name: str) -> tuple[Callable[[], object], str]:
    """(function, one-line description) for a claim's `oracle`; OracleNotFound with the reason."""
    if ":" in name:
        try:
            obj = references.resolve(name)
        except references.UnresolvedReference as exc:
            raise OracleNotFound(f"oracle {exc}") from None
        if not callable(obj):
            raise OracleNotFound(f"oracle {name!r} is a {type(obj).__name__}, not a function")
        doc = (obj.__doc__ or "").strip().splitlines()
        return obj, (doc[0] if doc else name)
    from fidelity.oracles.quantities import QUANTITIES

    if name not in QUANTITIES:
        raise OracleNotFound(f"oracle {name!r} is not a known quantity (nor module:function)")
    return QUANTITIES[name].fn, QUANTITIES[name].description


def check_claim(item: Item) -> dict:
    from fidelity.oracles.quantities import compare_claim

    data = item.data
    row = {"id": item.id, "paper": item.paper, "stated": data["value"], "oracle": data.get("oracle"),
           "source": f"{data['source']['file']} {data['source']['section']}", "computed": None,
           "difference": None, "verdict": "unchecked", "note": data.get("unchecked_reason", "no oracle")}
    name = data.get("oracle")
    if not name:
        return row
    try:
        fn, description = resolve_oracle(name)
        result = compare_claim(data["value"], fn())
    except OracleNotFound as exc:
        row.update(verdict="error", note=f"{exc} ({item.file}:{item.line})")
        return row
    except Exception as exc:  # the project's oracle itself broke: say so, never guess a verdict
        row.update(verdict="error", note=f"oracle {name!r} raised {type(exc).__name__}: {exc} ({item.file}:{item.line})")
        return row
    row.update(verdict=result["verdict"].lower(), computed=result["computed"],
               difference=result["difference"], note=description)
    return row


def check_claims(cat: Catalogue) -> list[dict]:
    return [check_claim(item) for item in cat.claims.values()]
