"""`fidelity check --subject X`: someone else's implementation, equation by equation.

The same gates that hold our reference run on the named subject alone. A gate that
fails there is a FINDING about that implementation (the equation, the gate, the
reading, the message), not a failure of our CI: the run exits non-zero only with
--strict. Gates the subject cannot drive are 'not run', with the subject's reason.
"""
from __future__ import annotations

import sys

from fidelity.check import gates_stage
from fidelity.subjects import registry


def equation_verdicts(cat, gate_rows: list[dict], subject: str) -> list[dict]:
    rows = []
    for eq in cat.equations.values():
        gates = [g for g in gate_rows if eq.id in g["equations"] and subject in g["subjects"]]
        if not gates:
            continue
        per = [(g, g["subjects"][subject]) for g in gates]
        failed = [(g, s) for g, s in per if s["status"] == "failed"]
        passed = [(g, s) for g, s in per if s["status"] == "passed"]
        verdict = "failed" if failed else "passed" if passed else "not run"
        findings = [{"gate": g["gate"], "nodeid": f["nodeid"], "readings": f.get("readings"),
                     "message": (f.get("message") or "").splitlines()[0] if f.get("message") else ""}
                    for g, _ in failed for f in g["failed"]]
        reasons = sorted({r for _, s in per for r in s["not_run_reasons"]})
        rows.append({"equation": eq.id, "paper": eq.paper, "verdict": verdict,
                     "gates": {g["gate"]: s["status"] for g, s in per}, "findings": findings,
                     "not_run_reasons": reasons if verdict == "not run" else []})
    return rows


def run(cat, args, say) -> dict:
    ref, subject = registry.resolve(args.subject)
    reason = subject.unavailable_reason()
    if reason is not None:
        say(f"subject   {subject.name}: NOT RUN: {reason}")
        return {"ok": not args.strict, "subject": subject.name, "reference": ref, "not_run": reason,
                "equations": [], "gates": []}
    say(f"subject   {subject.name} ({ref}): {subject.description}")
    say("gates     running the gate suite on this subject alone ...")
    data = gates_stage.run_gate_suite(env={registry.EXTRA_ENV: ref, registry.ONLY_ENV: subject.name})
    if data["returncode"] not in (0, 1):
        raise RuntimeError(f"the gate run did not complete (pytest exit {data['returncode']}):\n{data['output_tail'][-1500:]}")
    rows = gates_stage.summarise(data["items"])
    verdicts = equation_verdicts(cat, rows, subject.name)
    for v in verdicts:
        say(f"  {v['verdict']:8} {v['equation']}")
        for f in v["findings"][:3]:
            say(f"           finding: {f['nodeid']}: {f['message'][:160]}")
        if v["not_run_reasons"]:
            say(f"           not run: {v['not_run_reasons'][0][:160]}")
    failed = sum(1 for v in verdicts if v["verdict"] == "failed")
    passed = sum(1 for v in verdicts if v["verdict"] == "passed")
    not_run = sum(1 for v in verdicts if v["verdict"] == "not run")
    say(f"conformance of {subject.name}: {passed} equations passed, {failed} with findings, {not_run} not run"
        + ("" if args.strict or not failed else " (findings do not fail this run; use --strict)"))
    return {"ok": not (args.strict and failed), "subject": subject.name, "reference": ref,
            "equations": verdicts, "gates": rows}
