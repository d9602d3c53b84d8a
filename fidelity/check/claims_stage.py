"""check stage: every claim checked by its oracle. Refuted claims are findings, not failures."""
from __future__ import annotations

from collections import Counter


def run(cat, args, say) -> dict:
    from fidelity.claims import check_claims

    rows = check_claims(cat)
    counts = Counter(r["verdict"] for r in rows)
    say(f"claims    ok   {counts['confirmed']} confirmed, {counts['refuted']} refuted (findings about the "
        f"sources), {counts['unchecked']} unchecked")
    for r in rows:
        if r["verdict"] == "refuted":
            say(f"          refuted {r['id']}: stated {r['stated']}, computed {r['computed']}")
    bad = [r for r in rows if r["verdict"] == "error"]
    for r in bad:
        say(f"claims    RED  {r['id']}: {r['note']}")
    return {"stage": "claims", "ok": not bad, "claims": rows}
