"""check stage: every fixture re-derives identically from its oracle."""
from __future__ import annotations


def run(cat, args, say) -> dict:
    from fidelity import project
    from fidelity.fixtures import store

    try:
        drifts = store.verify(project.current().fixtures)
        drifts += _stale_predictions(cat, project.current().fixtures)
    except store.FixtureError as exc:
        say(f"fixtures  RED  {exc}")
        return {"stage": "fixtures", "ok": False, "error": str(exc)}
    for d in drifts:
        say(f"fixtures  DRIFT {d}")
    say(f"fixtures  {'ok ' if not drifts else 'RED'}  {len(drifts)} drifts")
    return {"stage": "fixtures", "ok": not drifts, "drifts": [d.to_json() for d in drifts]}


def _stale_predictions(cat, directory):
    """The specs' predicted readings recomputed from the fixtures: a stale prediction is a drift."""
    from fidelity.oracles import predicted_readings

    return predicted_readings.verify(cat, directory)
