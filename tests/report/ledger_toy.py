"""A toy project for the ledger's tests: one spec, one subject module, one gate file,
one fixture, and synthetic evidence records written the way the runner writes them.

Perturbations of the toy spec and the evidence each gets:
  P1  double triples        red by assertion, green after (accepted); a predicted
                            reading beside the observed one; the gate read the
                            fixture and recorded rtol = 0.1 -> separation 5 (weak)
  P2  inc adds 1.0          survived (a blind spot; its listed gate did not go red)
  P3  half is a third       no record at all: its prediction is PREDICTED ONLY
  P4  double squares        a record whose edits are no longer the spec's: stale
  P5  inc never returns     red for another reason (a timeout)
Paths in the records are absolute, so fidelity.check.evidence_stage (which
resolves relative paths against the real repository) reads them the same way.

A discovery record of toyledger_subj.arith (Toy.discovery_record, as `fidelity discover`
writes one), one mutant per outcome and two blind spots:
  m1  double: 2 * x -> 3 * x      killed by test_double
  m2  double: x -> abs(x)         blind spot, UNEXPLAINED (the witness: a negative input)
  m3  inc: + 1 -> + 2             blind spot, explained beside toy.eq3 (out_of_scope: OUT_OF_SCOPE_REASON)
  m4  inc: 1 -> None              error (a TypeError: red for another reason, not a kill)
  m5  half: / 2 -> * 0.5          equivalent on 3 probes
  m6  half: / -> //               undecided (no probe reached the line)
"""
from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

from fidelity.discover import records as discovery_records
from fidelity.evidence import store
from fidelity.evidence.paths import evidence_root
from fidelity.evidence.record import SCHEMA, edits_sha256
from fidelity.source_meaning import meaning_sha256, meaning_sha256_of
from fidelity.evidence.record import CLEAN_RUNS
from fidelity.evidence.staleness import ProjectNow
from fidelity.targets.patching import apply_edits, unified_diff
from fidelity.spec.loader import SCHEMA_FILE

GATE_FILE = "tests/gates/test_toy.py"
G_DOUBLE = f"{GATE_FILE}::test_double"
G_INC = f"{GATE_FILE}::test_inc"
G_HALF = f"{GATE_FILE}::test_half"
GATE_EQUATIONS = {G_DOUBLE: ["toy.eq1"], G_INC: ["toy.eq3"], G_HALF: ["toy.eq4"]}

MODULE = '''\
def double(x):
    return 2 * x


def inc(x):
    return x + 1


def half(x):
    return x / 2
'''

# what test_double said under P1 (a record keeps it after the instance's node id)
P1_SAID = ("AssertionError: y differs: 3 of 3 elements beyond 1e-06 relative, floor 1; worst at index (2,): got 6.0, "
           "expected 4.0, |diff| 2.0, relative 0.5 (5e+05 x the bound): the input came out tripled, not doubled")
EDITS = {
    "P1": [{"find": "return 2 * x", "replace": "return 3 * x"}],
    "P2": [{"find": "return x + 1", "replace": "return x + 1.0"}],
    "P3": [{"find": "return x / 2", "replace": "return x / 3"}],
    "P4": [{"find": "return 2 * x", "replace": "return x * x"}],
    "P5": [{"find": "    return x + 1", "replace": "    while True:\n        pass"}],
}

DISC_MODULE = "toyledger_subj.arith"
# (id, operator, line, function, description, find, replace, outcome, killed_by, detail, equivalence)
DISCOVERED = [
    ("m1", "constant", 2, "double", "2 -> 3", "    return 2 * x\n", "    return 3 * x\n", "killed",
     [G_DOUBLE], "", None),
    ("m2", "wrap_abs", 2, "double", "x -> abs(x)", "    return 2 * x\n", "    return 2 * abs(x)\n", "blind_spot",
     [], "", {"verdict": "blind_spot", "inputs": ["double(negative; n=4; seed 0)"], "max_difference": 4.0,
              "witness": {"input": "double(negative; n=4; seed 0)", "difference": 4.0, "error": None}}),
    ("m3", "constant", 6, "inc", "1 -> 2", "    return x + 1\n", "    return x + 2\n", "blind_spot", [], "",
     {"verdict": "blind_spot", "inputs": ["inc(default; n=4; seed 0)"], "max_difference": 1.0,
      "witness": {"input": "inc(default; n=4; seed 0)", "difference": 1.0, "error": None}}),
    ("m4", "constant", 6, "inc", "1 -> None", "    return x + 1\n", "    return x + None\n", "error", [],
     "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'", None),
    ("m5", "division_to_multiplication", 10, "half", "x / 2 -> x * 0.5", "    return x / 2\n",
     "    return x * 0.5\n", "equivalent", [], "",
     {"verdict": "equivalent", "inputs": ["half(default; n=1; seed 0)", "half(default; n=4; seed 0)",
                                          "half(default; n=4; seed 1)"], "max_difference": 0.0, "witness": None}),
    ("m6", "floor_division", 10, "half", "/ -> //", "    return x / 2\n", "    return x // 2\n", "undecided", [], "",
     {"verdict": "undecided", "inputs": ["half(default; n=1; seed 0)", "half(default; n=4; seed 0)",
                                         "half(default; n=4; seed 1)"], "max_difference": None,
      "witness": "none of the 3 probes executed the mutated line(s) 10-10"}),
]
DISC_KEYS = {d[0]: discovery_records.mutant_key({"find": d[5], "replace": d[6]}) for d in DISCOVERED}
EXPLAINED = f"{DISC_MODULE}:{DISC_KEYS['m3']}"
UNEXPLAINED = f"{DISC_MODULE}:{DISC_KEYS['m2']}"
OUT_OF_SCOPE_REASON = "the size of the increment is the toy's own choice, fixed by no equation"

SPEC = textwrap.dedent(f"""\
    schema_version: 1
    paper:
      id: toy
      arxiv: "2501.00001"
      version: v2
      title: A toy paper
      authors: [A. Author, B. Author]
      read: {{date: 2026-11-29, where: ["T1: a PDF of arXiv:2501.00001v2"]}}
      author_code: {{status: partial, where: github.com/example/toy at abc123, differs: "eps 1e-6"}}
    equations:
      - id: toy.eq1
        title: doubling
        where: {{section: "2", equation: "1"}}
        statement: y = 2 x
        tier: b
        status: implemented
        code: ["toyledger_subj.arith:double"]
      - id: toy.eq2
        title: a variant we do not build
        where: {{section: "5"}}
        statement: z = y + 1
        tier: b
        status: not-implemented
        notes: Not built. A second sentence that the ledger leaves out.
      - id: toy.eq3
        title: incrementing, with our own epsilon
        where: {{equation: "3"}}
        statement: w = x + 1
        tier: c
        status: deviates
        code: ["toyledger_subj.arith:inc"]
        deltas:
          - what: we add 1 in float
            why: the paper's integer arithmetic has no float form
        out_of_scope:
          - mutant: "{EXPLAINED}"
            reason: {OUT_OF_SCOPE_REASON}
      - id: toy.eq4
        title: halving, as the author code does it
        where: {{file: "toy.py"}}
        statement: h = x / 2
        tier: a
        status: implemented
        code: ["toyledger_subj.arith:half"]
        provenance: ["author code toy.py CONFIRMED"]
    claims:
      - id: toy.claim.rms_ok
        value: "27.39"
        statement: the RMS of 10, 20, 30, 40
        source: {{file: notes.txt, section: "1"}}
        oracle: rmsnorm.example.rms_10_20_30_40
      - id: toy.claim.rms_wrong
        value: "27.12"
        statement: a wrong RMS of 10, 20, 30, 40
        source: {{file: notes.txt, section: "2"}}
        oracle: rmsnorm.example.rms_10_20_30_40
      - id: toy.claim.unknowable
        value: "1.5"
        statement: a training loss
        source: {{file: other.txt, section: "3"}}
        oracle: null
        unchecked_reason: a training result; no oracle computes it
    perturbations:
      - id: P1
        title: double triples
        target: toyledger_subj.arith
        edits: {json.dumps(EDITS["P1"])}
        gates: ["{G_DOUBLE}"]
        covers: [toy.eq1]
        predicted:
          - gate: "{G_DOUBLE}"
            reading: 0.5
            note: 3x / 2x - 1
      - id: P2
        title: inc adds 1.0
        target: toyledger_subj.arith
        edits: {json.dumps(EDITS["P2"])}
        gates: ["{G_INC}"]
      - id: P3
        title: half is a third
        target: toyledger_subj.arith
        edits: {json.dumps(EDITS["P3"])}
        gates: ["{G_HALF}"]
        predicted:
          - gate: "{G_HALF}"
            reading: 0.3333333333
      - id: P4
        title: double squares
        target: toyledger_subj.arith
        edits: {json.dumps(EDITS["P4"])}
        gates: ["{G_DOUBLE}"]
      - id: P5
        title: inc never returns
        target: toyledger_subj.arith
        edits: {json.dumps(EDITS["P5"])}
        gates: ["{G_INC}"]
    """)

FIXTURE = {
    "id": "toy.fx", "oracle": "toy", "equations": ["toy.eq1"], "derivation": ["y = 2 x"],
    "inputs": {"x": [1, 2]}, "params": {}, "precision_digits": 40,
    "expected": {"y": {"digits": ["2", "4"], "float64": [2.0, 4.0]}},
    "predictions": {"toy.fx.triple": {"description": "P1: 3 x instead of 2 x. Second sentence.", "field": "y",
                                      "digits": ["3", "6"], "float64": [3.0, 6.0]},
                    "toy.fx.same": {"description": "a defect this fixture cannot see", "field": "y",
                                    "digits": ["2", "4"], "float64": [2.0, 4.0]}},
}


def sha(path: Path) -> str:
    """The key a run records for `path` (fidelity.source_meaning)."""
    return meaning_sha256(path)


@dataclass
class Toy:
    root: Path
    specs: Path
    reports: Path
    fixtures: Path
    module: Path

    def catalogue(self):
        from fidelity.spec import load_catalogue
        return load_catalogue(self.specs)

    def report_args(self, tmp_path: Path, gate_run: dict) -> tuple[list[str], Path]:
        """`fidelity report` arguments rendering this toy from the recorded `gate_run` into tmp_path/out."""
        run = tmp_path / "gate-run.json"
        run.write_text(json.dumps(gate_run))
        out = tmp_path / "out"
        return ["--specs", str(self.specs), "--reports", str(self.reports), "--out", str(out),
                "--fixtures", str(self.fixtures), "--no-html", "--gates-from", str(run)], out

    def record(self, pid: str, gate: str, outcome: str, *, reading=None, predicted=None, green_after=True,
               edits=None, listed=True, detail="", readings=None, fixtures=True, recorded_at="2026-11-29T10:00:00Z"):
        edits = edits if edits is not None else EDITS[pid]
        original = self.module.read_text()
        patched = apply_edits(original, edits, perturbation_id=pid, file="toyledger_subj/arith.py")
        gate_file = self.root / GATE_FILE
        fx = self.fixtures / "toy.fx.json"
        rec = {
            "schema": SCHEMA, "perturbation": pid, "title": f"title of {pid}", "spec_file": "specs/toy.yaml:1",
            "target": "toyledger_subj.arith", "target_file": str(self.module), "edits": edits,
            "edits_sha256": edits_sha256("toyledger_subj.arith", edits),
            "diff": unified_diff(original, patched, "toyledger_subj/arith.py"),
            "gate": gate, "gate_file": str(gate_file), "equations": GATE_EQUATIONS[gate], "listed": listed,
            "outcome": outcome, "detail": detail, "reading": reading, "predicted": predicted,
            "instances": [{"nodeid": gate + "[f64]", "outcome": "failed" if outcome == "red_by_assertion" else "passed",
                           "phase": "call", "kind": None, "exc_type": None, "message": None, "raised_in": None,
                           "skip_reason": None, "readings": readings or {}}],
            "green_after": green_after, "clean_runs": CLEAN_RUNS, "patch_served": 1,
            "hashes": {"gate_file": sha(gate_file), "target_source": sha(self.module),
                       "perturbed_source": meaning_sha256_of(patched.encode("utf-8"), ".py"),
                       "fixtures": {str(fx): sha(fx)} if fixtures else {},
                       "helpers": ProjectNow(self.root).helper_sha256(str(gate_file))},  # as they are now
            "versions": {"python": "3.11.7", "torch": "2.13.0+cpu", "pytest": "8", "fidelity": "0.1.0",
                         "platform": "linux"},
            "recorded_at": recorded_at,
        }
        store.write_record(evidence_root(self.reports), rec)
        return rec

    def discovery_record(self, module: str = DISC_MODULE, *, subject: str | None = None, mutants=None,
                         target_file: str | None = None, hashes: dict | None = None) -> dict:
        """Write a discovery record as `fidelity discover` does (records.write); by default the
        DISCOVERED mutants of toyledger_subj.arith, with the hashes of the code as it is now
        (a current record)."""
        original = self.module.read_text()
        rows = []
        for (mid, op, line, fn, desc, find, replace, outcome, killed_by, detail, eqv) in (
                DISCOVERED if mutants is None else mutants):
            edit = {"find": find, "replace": replace}
            patched = apply_edits(original, [edit], perturbation_id=mid, file="toyledger_subj/arith.py")
            rows.append({"id": f"arith.{mid}", "key": discovery_records.mutant_key(edit), "module": module,
                         "operator": op, "line": line, "function": fn, "description": desc,
                         "diff": unified_diff(original, patched, target_file or "toyledger_subj/arith.py"),
                         "outcome": outcome, "killed_by": list(killed_by), "detail": detail, "equivalence": eqv})
        counts: dict = {}
        for m in rows:
            row = counts.setdefault(m["operator"], dict.fromkeys(
                ("killed", "error", "equivalent", "blind_spot", "undecided"), 0))
            row[m["outcome"]] += 1
        rec = {"schema": discovery_records.SCHEMA, "module": module,
               "target_file": target_file or module.replace(".", "/") + ".py", "subject": subject,
               "hashes": hashes if hashes is not None else
               discovery_records.current_hashes(module, self.root, ["tests/gates"]),
               "counts": dict(sorted(counts.items())),
               "dropped": {"does_not_compile": 1, "duplicate": 0, "no_change": 2}, "gates_set_aside": [],
               "mutants": rows, "versions": {"python": "3.11.7", "fidelity": "0.1.0"},
               "recorded_at": "2026-11-30T08:00:00Z"}
        discovery_records.write(self.reports, rec)
        return rec

    def standard_evidence(self):
        self.record("P1", G_DOUBLE, "red_by_assertion", reading=0.5000001,
                    predicted={"reading": 0.5, "note": "3x / 2x - 1"}, readings={"reading": 0.5000001, "rtol": 0.1},
                    detail=f"{G_DOUBLE}[torch-cpu]: {P1_SAID}")
        self.record("P2", G_INC, "survived", reading=None, detail="")
        self.record("P4", G_DOUBLE, "red_by_assertion", reading=0.75,
                    edits=[{"find": "return 2 * x", "replace": "return x ** 2"}])
        self.record("P5", G_INC, "red_other", detail="timeout after 120 s", green_after=True)


def gate_run_record(extra_subject: bool = True) -> dict:
    """A recorded gate run as fidelity.report.gaterun writes it (no pytest needed)."""
    subjects = [{"name": "torch", "description": "reference", "available": True, "reason": None}]
    if extra_subject:
        subjects.append({"name": "triton", "description": "kernels", "available": False,
                         "reason": "triton is not installed"})

    def row(gate, eqs, torch_status, failed=0):
        subj = {"torch": {"status": torch_status, "passed": 0 if failed else 2, "failed": failed, "not_run": 2,
                          "not_run_reasons": ["Skipped: not run: no CUDA device"]}}
        if extra_subject:
            subj["triton"] = {"status": "not run", "passed": 0, "failed": 0, "not_run": 4,
                              "not_run_reasons": ["Skipped: subject triton not run: triton is not installed"]}
        return {"gate": gate, "status": torch_status, "equations": eqs, "subjects": subj, "instances": 8,
                "failed": [], "fixtures_read": [], "rtol": None, "separations": {}}

    return {"schema": "fidelity.report.gate-run/1", "recorded_at": "2026-11-29T09:00:00Z",
            "environment": {"python": "3.11.7", "torch": "2.13.0+cpu", "fidelity": "0.1.0", "platform": "linux",
                            "cuda": False},
            "returncode": 1, "collect_errors": [], "subjects": subjects,
            "gates": [row(G_DOUBLE, ["toy.eq1"], "passed"), row(G_INC, ["toy.eq3"], "failed", failed=1)]}


def make_toy(tmp_path: Path) -> Toy:
    root = tmp_path / "toyrepo"
    (root / "toyledger_subj").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.fidelity]\n")  # a fidelity project, all paths as default
    (root / "toyledger_subj" / "__init__.py").write_text("")
    module = root / "toyledger_subj" / "arith.py"
    module.write_text(MODULE)
    (root / "tests" / "gates").mkdir(parents=True)
    (root / GATE_FILE).write_text("def test_double():\n    pass\n\n\ndef test_inc():\n    pass\n")
    specs = root / "specs"
    specs.mkdir()
    (specs / "spec.schema.json").write_text(SCHEMA_FILE.read_text())
    (specs / "toy.yaml").write_text(SPEC)
    fixtures = root / "fixtures"
    fixtures.mkdir()
    (fixtures / "toy.fx.json").write_text(json.dumps(FIXTURE, indent=1, sort_keys=True) + "\n")
    reports = root / "reports"
    return Toy(root, specs, reports, fixtures, module)
