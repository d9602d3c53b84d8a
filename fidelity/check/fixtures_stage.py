"""check stage: every fixture re-derives identically from its oracle.

With `--changed`, a clean verification kept under the key of the same inputs is read instead of
recomputed (kept_fixture_check.py); a plain check always recomputes, and keeps a clean result.
"""
from __future__ import annotations


def run(cat, args, say) -> dict:
    from fidelity import project
    from fidelity.check import kept_fixture_check

    here = project.current()
    if getattr(args, "changed", False) and kept_fixture_check.unchanged(here.root, here.fixtures, cat.files):
        say("fixtures  ok   0 drifts (--changed: read from the last clean verification of the same inputs)")
        return {"stage": "fixtures", "ok": True, "drifts": [], "kept": True}
    from fidelity.fixtures import store  # imports sympy (0.6 s): only for a verification that runs
    try:
        drifts = store.verify(here.fixtures)
        drifts += _stale_predictions(cat, here.fixtures)
    except store.FixtureError as exc:
        say(f"fixtures  RED  {exc}")
        return {"stage": "fixtures", "ok": False, "error": str(exc)}
    for d in drifts:
        say(f"fixtures  DRIFT {d}")
    say(f"fixtures  {'ok ' if not drifts else 'RED'}  {len(drifts)} drifts")
    if not drifts:
        kept_fixture_check.save(here.root, here.fixtures, cat.files)
    return {"stage": "fixtures", "ok": not drifts, "drifts": [d.to_json() for d in drifts], "kept": False}


def _stale_predictions(cat, directory):
    """The specs' predicted readings recomputed from the fixtures: a stale prediction is a drift."""
    from fidelity.oracles import predicted_readings

    return predicted_readings.verify(cat, directory)
