"""Which gate a collected test instance is, read from its markers (the plugin's collect and run
entries both carry them): the gate id, its equations and targets, and what else the gate's markers say."""
from __future__ import annotations


def gate_id(nodeid: str) -> str:
    """The gate a test instance belongs to: its nodeid without parametrisation."""
    return nodeid.split("[", 1)[0]


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    out: list[str] = []
    for v in value:
        out.extend(_as_list(v))
    return out


def gate_markers(item) -> dict:
    """Equations and targets from an item's `gate` and `gate_targets` markers."""
    equations: set[str] = set()
    targets: set[str] = set()
    marked = False
    mechanism = gate_class = None
    for m in item.iter_markers("gate"):
        marked = True
        equations.update(_as_list(m.kwargs.get("equations", m.args[0] if len(m.args) > 0 else None)))
        targets.update(_as_list(m.kwargs.get("targets", m.args[1] if len(m.args) > 1 else None)))
        mechanism = mechanism or m.kwargs.get("mechanism")
        gate_class = gate_class or m.kwargs.get("gate_class")
    for m in item.iter_markers("gate_targets"):
        targets.update(_as_list(m.args))
        targets.update(_as_list(m.kwargs.get("targets")))
    checks = sorted({e for m in item.iter_markers("gate_checks") for e in _as_list(m.args)})
    subject = item.get_closest_marker("gate_subject")
    skip = item.get_closest_marker("skip")
    skip_reason = (skip.kwargs.get("reason") or (skip.args[0] if skip.args else "unconditional skip")) if skip else None
    return {"gate_marker": marked, "equations": sorted(equations), "checks": checks, "targets": sorted(targets),
            "mechanism": mechanism, "gate_class": gate_class,
            "subject": subject.args[0] if subject else None, "device": subject.args[1] if subject else None,
            "skip_marker": skip_reason}
