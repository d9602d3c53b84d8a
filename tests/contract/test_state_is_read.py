"""State is read, not waited for (issue 50): statefulpkg (tests/contract/statefulpkg) wrapped by stateful_adapter.py
and run through `fidelity check --subject stateful_adapter:OBJECT`, as a user runs it.

- COUNTING: a package Sinkhorn object the adapter keeps at module level, whose iteration counter is never reset
  (it degrades only after 1000 iterations in all): a stateless finding naming the counter from what to what,
  read through the globals the subject's callable names, whatever package defines the object's class. Run
  alone on a fresh process, the gate's calls stay far below the budget (the outputs are all exact): the
  counter alone shows it.
- MEMOISING: a stack that memoises its first output per input shape: a stateless finding (B given A's output,
  B on the used stack not B on a fresh one, and the memo in the state after the first call).
- WORKSPACE: a buffer allocated on the first call and overwritten by every call, declared in the capability
  (keeps_state): the gate passes and says what it was told; UNDECLARED_WORKSPACE, the same undeclared: a finding
  naming the buffer.
"""
import os
import re
import subprocess
import sys

import pytest

from fidelity.mechanisms.capability import Capability
from subject_check import HERE, REPO, conformance_of

STATE = "mhc.stateless"  # state kept between calls is listed under its cause (issue 51), not under each equation
VARIANTS = ("COUNTING", "MEMOISING", "WORKSPACE", "UNDECLARED_WORKSPACE")
SINKHORN_GATE = "tests/gates/test_sinkhorn_module_stateless.py::test_the_same_call_repeated_gives_the_same_bits"
STACK_GATE = "tests/gates/test_mhc_stack.py::test_one_stack_called_after_another_hidden_gives_the_same_bits"
COUNTER = re.compile(r"state sinkhorn\.func\.__wrapped__\.<global _COUNTING>\.total_iterations: "
                     r"int (\d+) -> int (\d+) -> int (\d+) -> int (\d+) -> int (\d+)")


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    # read at the stateless gates alone (Sinkhorn's only gate of mhc.stateless, and the stack's), in one run of both
    # files; UNDECLARED_WORKSPACE's whole run: no Eq. 9 finding in any gate
    read = ("test_sinkhorn_module_stateless.py", "test_mhc_stack.py")
    return conformance_of("stateful_adapter", VARIANTS, gate_files={"COUNTING": read, "WORKSPACE": read,
                                                                     "MEMOISING": read})


def _equation(conformance: dict, equation: str) -> dict:
    (eq,) = [e for e in conformance["equations"] if e["equation"] == equation]
    return eq


def _findings_of(conformance: dict, equation: str, gate: str) -> list[dict]:
    return [f for f in _equation(conformance, equation)["findings"] if f["gate"] == gate]


def _gate_alone(subject_ref: str, subject_name: str, gate_file: str) -> str:
    """pytest on one gate file with only this subject, in a fresh process: its output (warnings included)."""
    env = {**os.environ, "FIDELITY_SUBJECTS": subject_ref, "FIDELITY_ONLY_SUBJECTS": subject_name,
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    proc = subprocess.run([sys.executable, "-m", "pytest", gate_file, "-q", "-p", "no:randomly", "-p", "no:xdist",
                           "-p", "no:cacheprovider", "-W", "always"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    return proc.stdout + proc.stderr


def test_a_counter_never_reset_is_a_stateless_finding_naming_it_from_what_to_what(runs):
    found = _findings_of(runs["COUNTING"], STATE, SINKHORN_GATE)
    assert len(found) == 4  # float32 and float64, with and without a backward
    assert not _findings_of(runs["COUNTING"], "mhc.eq9", SINKHORN_GATE)  # listed under its cause, not Eq. 9
    for finding in found:
        assert finding["gate_class"] == "stateless"
        counts = list(map(int, COUNTER.search(finding["message"]).groups()))  # before, then after B', A, B, A
        assert counts == sorted(set(counts))


def test_the_counter_is_seen_in_the_gates_calls_long_before_the_budget_would_change_an_output():
    out = _gate_alone("stateful_adapter:COUNTING", "statefulpkg-counting", "tests/gates/test_sinkhorn_module_stateless.py")
    counts = sorted({tuple(map(int, m)) for m in COUNTER.findall(out)})  # pytest prints each failure twice
    assert len(counts) == 4 and "4 failed" in out, out[-3000:]
    assert counts[0] == (0, 20, 40, 60, 80)  # B on the function first, A, B, A: 20 iterations each
    assert all(count[-1] < 1000 for count in counts)  # under the budget: every output exact
    assert "elements differ" not in out and "returned A's results" not in out  # the state alone showed it


def test_a_stack_that_memoises_its_first_output_per_shape_is_a_stateless_finding(runs):
    (finding,) = _findings_of(runs["MEMOISING"], STATE, STACK_GATE)  # forward only: the forward instance
    message = finding["full_message"]
    assert finding["gate_class"] == "stateless"
    assert "B (other inputs) returned A's results bit for bit" in message
    assert "B on the used object, not B on a fresh one: output['output'] (float32[2, 3] cpu): 6 of 6 elements " \
           "differ" in message
    assert "state stack._first: dict of 0 -> dict of 1" in message


def test_a_declared_kept_state_passes_and_the_gate_says_what_it_was_told(runs):
    eq = _equation(runs["WORKSPACE"], STATE)
    assert eq["gates"][SINKHORN_GATE] == "passed" and eq["verdict"] == "passed"
    out = _gate_alone("stateful_adapter:WORKSPACE", "statefulpkg-workspace", "tests/gates/test_sinkhorn_module_stateless.py")
    assert "4 passed" in out, out[-3000:]
    told = re.findall(r"KeptStateNote: sinkhorn \(autograd route, float\d\d, with(?:out)? a backward\): declared kept "
                      r"state: '\*\._workspace' \(statefulpkg writes each result's column sums into a buffer per "
                      r"shape, for diagnostics; the projection never reads it\): \d entr(?:y|ies) changed, not counted: "
                      r"sinkhorn\.func\.__wrapped__\.<global _WORKSPACE>\._workspace", out)
    assert len(set(told)) == 4, out[-3000:]


def test_the_same_buffer_undeclared_is_a_finding_naming_it(runs):
    found = _findings_of(runs["UNDECLARED_WORKSPACE"], STATE, SINKHORN_GATE)
    assert len(found) == 4
    assert all("state sinkhorn.func.__wrapped__.<global _UNDECLARED_WORKSPACE>._workspace" in f["full_message"]
               for f in found)
    assert not [f for f in _equation(runs["UNDECLARED_WORKSPACE"], STATE)["findings"] if f["gate"] != SINKHORN_GATE]
    assert not _equation(runs["UNDECLARED_WORKSPACE"], "mhc.eq9")["findings"]


@pytest.mark.parametrize("keeps_state,problem", [
    ({"*": "a cache"}, "'*' names no state; name what is kept"),
    ({"*._kernels": " "}, "'*._kernels' gives no reason; say why the subject keeps it"),
    (("rng:torch",), "Capability.keeps_state must map each path pattern the subject changes to the reason"),
])
def test_a_declaration_must_name_what_is_kept_and_why(keeps_state, problem):
    capability = Capability(dtypes=("float32",), devices=("cpu",), backward=("autograd",), keeps_state=keeps_state)
    assert any(problem in p for p in capability.problems), capability.problems
    declared = Capability(dtypes=("float32",), devices=("cpu",), backward=("autograd",),
                          keeps_state={"rng:torch": "dropout draws from it in training mode"})
    assert declared.problems == () and declared.keeps_state == (("rng:torch", "dropout draws from it in training mode"),)
