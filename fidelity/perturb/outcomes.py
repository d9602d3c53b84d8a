"""From one child's per-test results to one Outcome per gate (evidence rule 4; the four outcomes
are defined in fidelity.evidence.outcome).

A gate is red_by_assertion when an instance failed by the gate's own assertion (the reading is that
instance's recorded "reading", None if it recorded none); red_other when an instance failed
otherwise, the gate's file did not collect, or the child timed out or crashed before the gate
finished; skipped when every instance that ran was skipped; survived otherwise.
"""
from __future__ import annotations

from fidelity.evidence import jsonio
from fidelity.evidence.outcome import Outcome
from fidelity.message_line import first_line
from fidelity.perturb.launch import OK_EXIT_CODES, ChildRun


INSTANCE_FIELDS = ("nodeid", "outcome", "phase", "kind", "exc_type", "message", "raised_in", "skip_reason", "readings")


def instance_summary(item: dict) -> dict:
    """The part of a plugin item kept in evidence (no durations: they churn)."""
    return {k: item.get(k) for k in INSTANCE_FIELDS}


def classify_gate(gate: str, gate_file: str, child: ChildRun, expected_instances: int | None = None) -> dict:
    """Outcome of `gate` in `child`: {"outcome", "reading", "detail", "instances", "fixtures_read"}."""
    instances = [i for i in child.items if i.get("gate") == gate]
    instances.sort(key=lambda i: i["nodeid"])
    fixtures = sorted({f for i in instances for f in i.get("fixtures_read", [])})
    out = {"instances": [instance_summary(i) for i in instances], "fixtures_read": fixtures}

    by_assertion = [i for i in instances if i["outcome"] == "failed" and i.get("kind") == "assertion"]
    if by_assertion:
        first = by_assertion[0]
        reading = jsonio.decode_float((first.get("readings") or {}).get("reading"))
        return dict(out, outcome=Outcome.RED_BY_ASSERTION, reading=reading,
                    detail=f"{first['nodeid']}: {first.get('exc_type')}: {first_line(first.get('message'))}")

    other = [i for i in instances if i["outcome"] in ("failed", "error")]
    if other:
        first = other[0]
        where = f" (in {first['phase']}, raised at {first.get('raised_in')})" if first.get("raised_in") else f" (in {first['phase']})"
        return dict(out, outcome=Outcome.RED_OTHER, reading=None,
                    detail=f"{first['nodeid']}: {first.get('exc_type')}: {first_line(first.get('message'))}{where}")

    in_flight_here = child.in_flight is not None and child.in_flight.split("[", 1)[0] == gate
    incomplete = expected_instances is not None and len(instances) < expected_instances
    if child.status != "ok" and (in_flight_here or incomplete or not instances):
        what = child.status_text
        detail = what if in_flight_here else f"{what}, before this gate finished"
        return dict(out, outcome=Outcome.RED_OTHER, reading=None, detail=detail)

    if not instances:
        errs = [e for e in child.collect_errors if e.get("nodeid") in ("", gate_file) or gate.startswith(e.get("nodeid") + "::")]
        if errs:
            e = errs[0]
            lines = [l for l in (e.get("message") or "").splitlines() if l.strip()]
            detail = f"collection error: {e.get('exc_type')}: " + first_line(lines[-1] if lines else "")
        elif child.returncode not in OK_EXIT_CODES:
            detail = f"not collected (pytest exit code {child.returncode})"
        else:
            detail = "not collected"
        return dict(out, outcome=Outcome.RED_OTHER, reading=None, detail=detail)

    if all(i["outcome"] == "skipped" for i in instances):
        return dict(out, outcome=Outcome.SKIPPED, reading=None, detail=first_line(instances[0].get("skip_reason")))
    return dict(out, outcome=Outcome.SURVIVED, reading=None, detail="")



def readings_by_nodeid(child: ChildRun) -> dict[str, dict]:
    return {i["nodeid"]: i.get("readings") or {} for i in child.items}


