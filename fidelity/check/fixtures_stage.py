"""check stage: every fixture re-derives identically from its oracle."""
from __future__ import annotations


def run(cat, args, say) -> dict:
    from fidelity import project
    from fidelity.fixtures import store

    try:
        drifts = store.verify(project.current().fixtures)
    except store.FixtureError as exc:
        say(f"fixtures  RED  {exc}")
        return {"stage": "fixtures", "ok": False, "error": str(exc)}
    for d in drifts:
        say(f"fixtures  DRIFT {d}")
    say(f"fixtures  {'ok ' if not drifts else 'RED'}  {len(drifts)} drifts")
    return {"stage": "fixtures", "ok": not drifts, "drifts": [d.to_json() for d in drifts]}
