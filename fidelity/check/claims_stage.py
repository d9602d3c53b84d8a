"""check stage: every claim checked by its oracle. Refuted claims are findings, not failures.

With `--changed`, the verdicts of the last clean stage kept under the key of the same inputs are read
instead of computed (kept_claims_check.py); a plain check always computes them."""
from __future__ import annotations

from collections import Counter


def run(cat, args, say) -> dict:
    from fidelity import project
    from fidelity.check import kept_claims_check

    here = project.current()
    kept = kept_claims_check.rows(here.root, cat.files) if getattr(args, "changed", False) else None
    if kept is None:
        from fidelity.claims import check_claims

        rows = check_claims(cat)
    else:
        rows = kept
        say("claims    --changed: read from the last clean claims stage of the same inputs")
    counts = Counter(r["verdict"] for r in rows)
    say(f"claims    ok   {counts['confirmed']} confirmed, {counts['refuted']} refuted (findings about the "
        f"sources), {counts['unchecked']} unchecked")
    for r in rows:
        if r["verdict"] == "refuted":
            say(f"          refuted {r['id']}: stated {r['stated']}, computed {r['computed']}")
    bad = [r for r in rows if r["verdict"] == "error"]
    for r in bad:
        say(f"claims    RED  {r['id']}: {r['note']}")
    if kept is None and not bad:
        kept_claims_check.save(here.root, cat.files, rows)
    return {"stage": "claims", "ok": not bad, "claims": rows, "kept": kept is not None}
