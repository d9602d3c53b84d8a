"""Each third-party subject's conformance, equation by equation: the verdicts `fidelity check
--subject` prints, with each finding's gate, instance, readings and message.
"""
from __future__ import annotations

import re
from collections import Counter

from fidelity.report.ledger.subject_matrix import strip_skip
from fidelity.report.ledger.terms import CHOICE, ERROR, FINDING


def _instance(nodeid: str) -> str:
    """'tests/gates/f.py::test_x[pot-cpu-f32]' -> 'pot-cpu-f32' ('' without parameters)."""
    m = re.search(r"\[(.*)\]$", nodeid)
    return m.group(1) if m else ""


def third_party(cat, gate_run: dict | None) -> list[dict] | None:
    """Each third-party subject's conformance, equation by equation (None: the run has no such key).

    The verdicts are fidelity.gaterun.conformance.equation_verdicts, the ones `fidelity check
    --subject` prints (passed / finding / error / not run): a finding or an error is about
    that package and counts in no verdict of ours.
    """
    if gate_run is None or "third_party" not in gate_run:
        return None
    from fidelity.gaterun.conformance import equation_verdicts

    out = []
    for run in gate_run["third_party"]:
        rows = run.get("gates", [])
        recorded = {f["nodeid"]: f for r in rows for f in r.get("failed", [])}
        equations = []
        for v in equation_verdicts(cat, rows, run["name"]):
            # a finding (the gate's assertion) and an error (the package raised) are both about the
            # package; each keeps its outcome so the page can say which it was
            findings = [{"gate": f["gate"], "nodeid": f["nodeid"], "instance": _instance(f["nodeid"]),
                         "outcome": outcome,
                         "kind": recorded.get(f["nodeid"], {}).get("kind"),
                         "exc_type": recorded.get(f["nodeid"], {}).get("exc_type"),
                         "readings": dict(sorted((f.get("readings") or {}).items())),
                         "message": f["message"].splitlines()[0] if f["message"] else "",
                         **({"choices": f["choices"]} if f.get("choices") else {})}
                        for outcome, group in ((FINDING, v["findings"]), (ERROR, v["errors"]),
                                               (CHOICE, v.get("differs_from_our_choice", []))) for f in group]
            equations.append({"equation": v["equation"], "paper": v["paper"],
                              "verdict": v["verdict"],
                              "gates": dict(sorted(v["gates"].items())), "findings": findings,
                              "not_run_reasons": sorted({strip_skip(r) for r in v["not_run_reasons"]})})
        verdicts = Counter(e["verdict"] for e in equations)
        out.append({"name": run["name"], "reference": run.get("reference"), "description": run.get("description", ""),
                    "available": run.get("available", True), "reason": run.get("reason"),
                    "versions": dict(run.get("versions") or {}), "returncode": run.get("returncode"),
                    "collect_errors": len(run.get("collect_errors") or []), "gates": len(rows),
                    "gates_with_findings": sum(1 for r in rows if r.get("status") == "failed"),
                    "passed": verdicts.get("passed", 0), "findings": verdicts.get(FINDING, 0),
                    "errors": verdicts.get(ERROR, 0), "differs_from_our_choice": verdicts.get(CHOICE, 0),
                    "not_run": verdicts.get("not run", 0), "equations": equations})
    return sorted(out, key=lambda t: t["name"])
