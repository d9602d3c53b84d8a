"""After an edit, what failed comes first (issue 52, point 4). An edit to one module made every record of its
perturbations stale, and check's text printed about 30 lines "evidence RED ... only stale evidence" after the
few gates that really failed. Now the real failures come first and stale evidence is one line per target
module, with what it holds back and the `fidelity perturb` command that re-runs it; --json keeps every
problem's sentence and every gate's stale entries.

Built from constructed records (no gate run): two edited modules, pkg.alpha (P1..P3) and pkg.beta (P10),
and real failures beside them: a listed gate whose current record survived (P20), a gate whose only
(stale) record never accepted it, and an implemented equation no gate covers."""
from types import SimpleNamespace

from fidelity.check import evidence_stage, stale_evidence
from fidelity.evidence.outcome import Outcome
from fidelity.evidence.record import EvidenceRecord
from fidelity.evidence.verdict import Judged

A1, A2, B1, WEAK, NEVER = "t.py::test_a1", "t.py::test_a2", "t.py::test_b1", "t.py::test_weak", "t.py::test_never"
ALPHA = "target source pkg.alpha changed"
BETA = "target source pkg.beta changed"


def _judged(pid, gate, target, outcome=Outcome.RED_BY_ASSERTION, stale=()):
    rec = EvidenceRecord(perturbation=pid, gate=gate, gate_file="t.py", target=target, outcome=outcome, hashes={},
                         green_after=True, edits_sha256="x", clean_runs=10, listed=True)
    return Judged(rec, tuple(stale))


def _stage():
    perturbations = {"P1": [A1, A2], "P2": [A1], "P3": [A2], "P10": [B1], "P20": [WEAK]}
    judged = [_judged(pid, g, "pkg.alpha", stale=[ALPHA]) for pid in ("P1", "P2", "P3") for g in perturbations[pid]]
    judged += [_judged("P10", B1, "pkg.beta", stale=[BETA]),
               _judged("P20", WEAK, "pkg.gamma", Outcome.SURVIVED),
               _judged("P3", NEVER, "pkg.alpha", Outcome.SURVIVED, stale=[ALPHA])]
    eqs = {"e.one": [A1, A2], "e.two": [B1], "e.three": [WEAK, NEVER], "e.bare": []}
    cat = SimpleNamespace(
        equations={e: SimpleNamespace(id=e, paper="e", data={"tier": "a", "status": "implemented"}) for e in eqs},
        perturbations={p: SimpleNamespace(id=p, data={"title": f"defect {p}", "gates": g})
                       for p, g in perturbations.items()})
    rows = [{"gate": g, "equations": sorted(e for e, gs in eqs.items() if g in gs)} for g in (A1, A2, B1, WEAK, NEVER)]
    spec_of = {p: dict(x.data) for p, x in cat.perturbations.items()}
    said = []
    result = evidence_stage.run(cat, None, said.append, gate_rows=rows,
                                evidence=evidence_stage.JudgedEvidence(spec_of, judged, []))
    return said, result, rows


def test_real_failures_come_first_then_one_line_per_edited_module_naming_the_command():
    said, result, _ = _stage()
    assert not result["ok"]
    stale = [i for i, line in enumerate(said) if "stale evidence of" in line]
    alpha = [said[i] for i in stale if "pkg.alpha" in said[i]]
    beta = [said[i] for i in stale if "pkg.beta" in said[i]]
    assert len(alpha) == 1 and len(beta) == 1, said
    assert "run `fidelity perturb P1..P3`" in alpha[0] and ALPHA in alpha[0], alpha
    assert "2 gates not accepted" in alpha[0] and "3 perturbations caught by no gate" in alpha[0], alpha
    assert "run `fidelity perturb P10`" in beta[0] and "1 gate not accepted" in beta[0], beta
    real = [i for i, line in enumerate(said) if any(s in line for s in (
        f"perturbation P20 lists gate {WEAK}, whose current record under it reads survived",
        f"gate {NEVER} is not accepted", "equation e.bare", "perturbation P20 (defect P20) is caught by no gate"))]
    assert len(real) == 4 and max(real) < min(stale), said
    # the sentences the module lines stand for are not printed one by one
    assert not any(f"gate {A1} is not accepted" in line or "perturbation P1 lists gate" in line for line in said), said
    assert said[-1].startswith("evidence  RED  0/5 gates accepted"), said


def test_json_keeps_every_sentence_and_every_gates_stale_entries_and_adds_the_module_summary():
    _, result, rows = _stage()
    assert any(p.startswith(f"gate {A1} is not accepted (only stale evidence: P1: {ALPHA}") for p in result["problems"])
    assert any(p.startswith(f"perturbation P1 lists gate {A1}, which has no current record") for p in result["problems"])
    assert any(p.startswith("perturbation P10 (defect P10) is caught by no gate") for p in result["problems"])
    [a1] = [r for r in rows if r["gate"] == A1]
    assert [(e["perturbation"], e["reasons"]) for e in a1["stale_evidence"]] == [("P1", [ALPHA]), ("P2", [ALPHA])]
    modules = {m["module"]: m for m in result["stale_evidence"]}
    assert sorted(modules) == ["pkg.alpha", "pkg.beta"]
    assert modules["pkg.alpha"]["perturbations"] == ["P1", "P2", "P3"]
    assert modules["pkg.alpha"]["command"] == "fidelity perturb P1..P3"


def test_a_range_is_written_only_for_three_or_more_consecutive_ids():
    assert stale_evidence.spans(["P1", "P2", "P4", "P5", "P6", "P9", "swap-axes"]) == "P1 P2 P4..P6 P9 swap-axes"
