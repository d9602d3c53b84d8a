"""Step 1, the inputs: every perturbation checked, and its patch computed on its target's source found
without importing it (InvalidPerturbation, TargetNotFound and PatchError raise here, before any child runs)."""
from __future__ import annotations

from typing import Iterable

from fidelity.evidence import jsonio, paths
from fidelity.perturb.errors import InvalidPerturbation
from fidelity.perturb.stages.settings import Settings
from fidelity.source_meaning import memo_of
from fidelity.targets import locate, patching
from fidelity.targets.errors import TargetNotFound


def read_inputs(perturbations: Iterable[dict], s: Settings) -> tuple[list[dict], dict[str, patching.Patch]]:
    """The perturbations checked, and each one's patch, computed on its target's source found
    without importing it (InvalidPerturbation, TargetNotFound, PatchError raise here)."""
    perts = [validate(p) for p in perturbations]
    _refuse_colliding_ids(perts)
    search = locate.child_search_path(str(s.root), s.pythonpath)
    memo = memo_of(s.root)
    return perts, {p["id"]: _patch(p, search, memo) for p in perts}


def validate(p: dict) -> dict:
    """A checked, normalised copy of one perturbation dict."""
    if not isinstance(p, dict):
        raise InvalidPerturbation(f"a perturbation must be a mapping, got {type(p).__name__}")
    pid = p.get("id")
    where = f"perturbation {pid!r}" + (f" ({p['file']})" if p.get("file") else "")
    if not isinstance(pid, str) or not pid.strip():
        raise InvalidPerturbation(f"{where}: 'id' must be a non-empty string")
    if not isinstance(p.get("target"), str) or not p["target"]:
        raise InvalidPerturbation(f"{where}: 'target' must be a module name")
    edits = p.get("edits")
    if not isinstance(edits, list) or not edits:
        raise InvalidPerturbation(f"{where}: 'edits' must be a non-empty list")
    gates = p.get("gates") or []
    if not isinstance(gates, list) or not all(isinstance(g, str) for g in gates):
        raise InvalidPerturbation(f"{where}: 'gates' must be a list of gate ids")
    predicted = p.get("predicted") or []
    if not isinstance(predicted, list):
        raise InvalidPerturbation(f"{where}: 'predicted' must be a list")
    preds: dict[str, dict] = {}
    for pr in predicted:
        if not isinstance(pr, dict) or not isinstance(pr.get("gate"), str):
            raise InvalidPerturbation(f"{where}: each prediction needs a 'gate'")
        try:
            reading = jsonio.decode_float(pr.get("reading")) if isinstance(pr.get("reading"), str) else float(pr["reading"])
        except (KeyError, TypeError, ValueError):
            raise InvalidPerturbation(f"{where}: prediction for {pr['gate']} needs a numeric 'reading'") from None
        if pr["gate"] in preds:
            raise InvalidPerturbation(f"{where}: two predictions for {pr['gate']}")
        preds[pr["gate"]] = {"reading": reading, "note": str(pr.get("note") or "")}
    timeout = p.get("timeout_s")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise InvalidPerturbation(f"{where}: 'timeout_s' must be a positive number")
    return {
        "id": pid,
        "title": str(p.get("title") or pid),
        "target": p["target"],
        "edits": edits,
        "gates": sorted(set(gates)),
        "predicted": preds,
        "file": p.get("file"),
        "timeout_s": timeout,
        "subject": p.get("subject"),
        "reach": _reach(p.get("reach"), where),
    }


def _reach(reach, where: str) -> dict | None:
    """What running a perturbation's changed code means, for trace_lines: {"lines": [first, last]}
    (a line in that range executed), {"call": line} (the function whose code starts at that line
    was called), or None (module-level code: every instance reaches it)."""
    if reach is None:
        return None
    ok = isinstance(reach, dict) and (
        (set(reach) == {"lines"} and isinstance(reach["lines"], list) and len(reach["lines"]) == 2
         and all(isinstance(x, int) for x in reach["lines"]))
        or (set(reach) == {"call"} and isinstance(reach["call"], int)))
    if not ok:
        raise InvalidPerturbation(f"{where}: 'reach' must be {{'lines': [first, last]}} or {{'call': line}}")
    return reach


def _refuse_colliding_ids(perts: list[dict]) -> None:
    seen: dict[str, str] = {}
    for p in perts:
        key = paths.sanitise(p["id"])
        if key in seen:
            raise InvalidPerturbation(f"perturbation ids {seen[key]!r} and {p['id']!r} collide (same evidence directory)")
        seen[key] = p["id"]


def _patch(p: dict, search, memo) -> patching.Patch:
    try:
        path = locate.find_source(p["target"], search)
    except TargetNotFound as e:
        raise TargetNotFound(f"{display_name(p)}: {e}") from None
    return patching.make_patch(p["id"], p["target"], path, p["edits"],
                               display_path=locate.module_path(p["target"], path), memo=memo)


def display_name(p: dict) -> str:
    """A validated perturbation as error messages name it."""
    return f"perturbation {p['id']}" + (f" ({p['file']})" if p["file"] else "")
