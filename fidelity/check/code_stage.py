"""check stage: every spec code location (module:qualname) imports, and every
implemented or deviating equation names at least one."""
from __future__ import annotations

import importlib


def resolve(ref: str):
    """'fidelity.impl.torch.mhc:MhcResidual.coefficients' -> the object; raises on failure."""
    module, _, qualname = ref.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def run(cat, args, say) -> dict:
    problems = []
    for eq in cat.equations.values():
        refs = eq.data.get("code", [])
        if eq.data["status"] in ("implemented", "deviates") and not refs:
            problems.append({"equation": eq.id, "where": f"{eq.file}:{eq.line}",
                             "problem": f"status {eq.data['status']} but no code location"})
        for ref in refs:
            try:
                resolve(ref)
            except (ImportError, AttributeError) as exc:
                problems.append({"equation": eq.id, "where": f"{eq.file}:{eq.line}", "code": ref,
                                 "problem": f"does not import: {type(exc).__name__}: {exc}"})
    for p in problems:
        say(f"code      RED  {p['equation']} ({p['where']}): {p.get('code', '')} {p['problem']}")
    count = sum(len(e.data.get("code", [])) for e in cat.equations.values())
    say(f"code      {'ok ' if not problems else 'RED'}  {count} code locations, {len(problems)} problems")
    return {"stage": "code", "ok": not problems, "problems": problems}
