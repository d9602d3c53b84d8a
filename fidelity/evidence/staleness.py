"""Whether a record is CURRENT: what ran is still what is there.

A record is current while the gate file, the target's source and every fixture it read hash as
recorded (the target is found again by its module name on the import path a child of this project
has now, wherever it is installed), and, when the perturbation is given, its edits are unchanged.
"""
from __future__ import annotations

import os
from typing import Mapping

from fidelity.evidence import jsonio
from fidelity.evidence.paths import resolve
from fidelity.evidence.record import EvidenceRecord, edits_sha256
from fidelity.targets import locate
from fidelity.targets.errors import TargetNotFound


def staleness(record: EvidenceRecord, repo_root: str | os.PathLike,
              perturbation: Mapping | None = None) -> list[str]:
    """Why `record` is no longer current (empty list: it is current)."""
    reasons = _target_staleness(record.target, record.hashes.get("target_source"), repo_root)
    checks = [("gate file", record.gate_file, record.hashes.get("gate_file"))]
    checks += [("fixture", path, sha) for path, sha in sorted((record.hashes.get("fixtures") or {}).items())]
    for what, path, sha in checks:
        if not path or not sha:
            reasons.append(f"{what}: no hash recorded")
            continue
        now = jsonio.sha256_file(resolve(path, repo_root))
        if now is None:
            reasons.append(f"{what} {path} is missing")
        elif now != sha:
            reasons.append(f"{what} {path} changed")
    if perturbation is not None:
        if perturbation.get("id") != record.perturbation:
            reasons.append(f"record is for {record.perturbation}, not {perturbation.get('id')}")
        elif edits_sha256(perturbation.get("target", ""), perturbation.get("edits", [])) != record.edits_sha256:
            reasons.append("the perturbation's target or edits changed")
    return reasons


def is_current(record: EvidenceRecord, repo_root: str | os.PathLike, perturbation: Mapping | None = None) -> bool:
    return not staleness(record, repo_root, perturbation)


def _target_staleness(module: str | None, sha: str | None, repo_root) -> list[str]:
    """Why the target's source no longer hashes as recorded: it is located again by module name."""
    if not module or not sha:
        return ["target source: no module or hash recorded"]
    try:
        path = locate.find_source(module, locate.child_search_path(str(repo_root)))
    except TargetNotFound as exc:
        return [f"target {module} cannot be found on this import path: {exc}"]
    if jsonio.sha256_file(path) != sha:
        return [f"target source {module} changed"]
    return []
