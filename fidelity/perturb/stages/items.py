"""What node ids and a child's items say, as every stage reads them: a node id's gate, instances per
gate, an unpatched instance's seconds, the fixtures an instance opened."""
from __future__ import annotations

from pathlib import Path

from fidelity.evidence import paths
from fidelity.perturb import launch


def gate_of(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def instances_per_gate(nodeids) -> dict[str, int]:
    """Instances per gate among the node ids a child was asked to run."""
    out: dict[str, int] = {}
    for n in nodeids:
        out[gate_of(n)] = out.get(gate_of(n), 0) + 1
    return out


def durations(child: launch.ChildRun) -> dict[str, float]:
    """Seconds each instance took in an unpatched run: the cost model for ordering children."""
    return {it["nodeid"]: float(it.get("duration_s") or 0.0) for it in child.items}


def fixtures_of(item: dict, root: Path) -> list[str]:
    """The fixture files an instance opened, as evidence names them (relative to the root)."""
    return sorted(paths.rel_to_root(f, root) for f in item.get("fixtures_read", []))
