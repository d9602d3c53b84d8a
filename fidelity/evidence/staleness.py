"""Whether a record is CURRENT: what ran is still what is there.

A record is current while the gate file, the target's source, every fixture it read and the gate's
helpers (gate_helpers.py: its conftests, the helper modules and gate library modules it imports) key
as recorded (the target and the library modules are found again by module name on the import path a
child of this project has now, wherever it is installed), and, when the perturbation is given, its
edits are unchanged and, applied to the target now, give a source that means what the perturbed
source the record ran meant.

Keys are by meaning (source_meaning.py): a comment, a docstring or a reformatting changes no key, so
it leaves every record current. The perturbed source is keyed too because a find/replace edit reads
text, not meaning: after a comment edit the same `find` may no longer match, or match in a comment,
and then the record is stale (or its perturbation's edits no longer apply, which says so).
"""
from __future__ import annotations

import os
from typing import Mapping

from fidelity.evidence.gate_helpers import GateHelpers
from fidelity.evidence.paths import resolve
from fidelity.evidence.record import EvidenceRecord, edits_sha256
from fidelity.source_meaning import meaning_sha256, memo_of
from fidelity.targets import locate, patching
from fidelity.targets.errors import PatchError, TargetNotFound


class ProjectNow:
    """The project's files as they are now, each hashed (and each target located) once: one
    judgement reads thousands of records that share a few dozen gate files, fixtures and targets.
    Make one per judgement, not one for longer: a file edited after it was made is not seen."""

    def __init__(self, repo_root: str | os.PathLike):
        self.root = repo_root
        self._sha: dict[str, str | None] = {}
        self._targets: dict[str, tuple[str | None, str | None]] = {}
        self._search: list[str] | None = None
        self._helpers: GateHelpers | None = None
        self._helper_sha: dict[str, dict[str, str | None]] = {}
        self._perturbed: dict[tuple, tuple[str | None, str | None]] = {}
        self._edits: dict[int, tuple[Mapping, str]] = {}
        self.memo = memo_of(repo_root)

    def sha256(self, path: str) -> str | None:
        """The meaning key of `path` (as a record names it) now; None when it is missing."""
        if path not in self._sha:
            self._sha[path] = meaning_sha256(resolve(path, self.root), self.memo)
        return self._sha[path]

    def search(self) -> list[str]:
        """The import path a child of this project has."""
        if self._search is None:
            self._search = locate.child_search_path(str(self.root))
        return self._search

    def helper_sha256(self, gate_file: str) -> dict[str, str | None]:
        """name -> sha256 of each of the gate file's helpers now (gate_helpers.py)."""
        if gate_file not in self._helper_sha:
            if self._helpers is None:
                self._helpers = GateHelpers(self.root, self.search())
            self._helper_sha[gate_file] = {name: meaning_sha256(path, self.memo)
                                           for name, path in self._helpers.of(gate_file).items()}
        return self._helper_sha[gate_file]

    def target_sha256(self, module: str) -> tuple[str | None, str | None]:
        """(meaning key of the source a child would import for `module`, None) or (None, why it cannot be found)."""
        if module not in self._targets:
            try:
                self._targets[module] = (meaning_sha256(locate.find_source(module, self.search()), self.memo), None)
            except TargetNotFound as exc:
                self._targets[module] = (None, str(exc))
        return self._targets[module]

    def edits_sha256(self, perturbation: Mapping) -> str:
        """The sha256 of the perturbation's target and edits (record.edits_sha256), once per perturbation: each
        of its ~50 records asks twice (a JSON dump each time: 0.2 s of a check)."""
        kept = self._edits.get(id(perturbation))
        if kept is None or kept[0] is not perturbation:  # the object kept alive, so its id is not reused
            kept = self._edits[id(perturbation)] = (perturbation, edits_sha256(perturbation.get("target", ""),
                                                                               perturbation.get("edits", [])))
        return kept[1]

    def perturbed_key(self, perturbation: Mapping) -> tuple[str | None, str | None]:
        """(meaning key of the perturbation's target with its edits applied now, None), or (None, why
        they cannot be applied)."""
        module, edits = perturbation.get("target", ""), perturbation.get("edits", [])
        at = (module, self.edits_sha256(perturbation))
        if at not in self._perturbed:
            try:
                path = locate.find_source(module, self.search())
                self._perturbed[at] = (patching.perturbed_key(path, edits, perturbation_id=perturbation.get("id", "?"),
                                                              memo=self.memo), None)
            except (TargetNotFound, PatchError, OSError) as exc:
                self._perturbed[at] = (None, str(exc))
        return self._perturbed[at]


def staleness(record: EvidenceRecord, repo_root: str | os.PathLike,
              perturbation: Mapping | None = None, now: ProjectNow | None = None) -> list[str]:
    """Why `record` is no longer current (empty list: it is current). `now`: the files as one
    judgement reads them (default: read afresh)."""
    now = now or ProjectNow(repo_root)
    target_reasons = _target_staleness(record.target, record.hashes.get("target_source"), now)
    reasons = list(target_reasons)
    checks = [("gate file", record.gate_file, record.hashes.get("gate_file"))]
    checks += [("fixture", path, sha) for path, sha in sorted((record.hashes.get("fixtures") or {}).items())]
    for what, path, sha in checks:
        if not path or not sha:
            reasons.append(f"{what}: no hash recorded")
            continue
        sha_now = now.sha256(path)
        if sha_now is None:
            reasons.append(f"{what} {path} is missing")
        elif sha_now != sha:
            reasons.append(f"{what} {path} changed")
    if record.gate_file:
        reasons += _helper_staleness(record.hashes.get("helpers"), now.helper_sha256(record.gate_file))
    if perturbation is not None:
        if perturbation.get("id") != record.perturbation:
            reasons.append(f"record is for {record.perturbation}, not {perturbation.get('id')}")
        elif now.edits_sha256(perturbation) != record.edits_sha256:
            reasons.append("the perturbation's target or edits changed")
        elif not target_reasons:  # a changed target changes what its edits give: said once, above
            reasons += _perturbed_staleness(record.hashes.get("perturbed_source"), perturbation, now)
    return reasons


def is_current(record: EvidenceRecord, repo_root: str | os.PathLike, perturbation: Mapping | None = None,
               now: ProjectNow | None = None) -> bool:
    return not staleness(record, repo_root, perturbation, now)


def _target_staleness(module: str | None, sha: str | None, now: ProjectNow) -> list[str]:
    """Why the target's source no longer hashes as recorded: it is located again by module name."""
    if not module or not sha:
        return ["target source: no module or hash recorded"]
    sha_now, missing = now.target_sha256(module)
    if missing is not None:
        return [f"target {module} cannot be found on this import path: {missing}"]
    if sha_now != sha:
        return [f"target source {module} changed"]
    return []


def _perturbed_staleness(recorded: str | None, perturbation: Mapping, now: ProjectNow) -> list[str]:
    """Why the perturbation's edits, applied to its target now, no longer give the source the record ran."""
    if not recorded:
        return ["perturbed source: no key recorded"]
    key_now, why = now.perturbed_key(perturbation)
    if why is not None:
        return [f"the perturbation's edits no longer apply to {perturbation.get('target')}: {why}"]
    if key_now != recorded:
        return [f"the perturbation's edits applied to {perturbation.get('target')} now give another program"]
    return []


def _helper_staleness(recorded, now: dict[str, str | None]) -> list[str]:
    """Why the gate's helpers (name -> sha256) are not those recorded: one changed, or the gate imports
    another set of them."""
    if not isinstance(recorded, dict):
        return ["gate helpers: no hash recorded"]
    reasons = [f"gate helper {name} changed" for name in sorted(set(recorded) & set(now)) if recorded[name] != now[name]]
    reasons += [f"the gate no longer imports {name}" for name in sorted(set(recorded) - set(now))]
    reasons += [f"the gate now imports {name}" for name in sorted(set(now) - set(recorded))]
    return reasons
