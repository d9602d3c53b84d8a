"""Stacks in the shapes real packages have (shapedstacks/, wrapped by shaped_stack_adapter.py), run through
`fidelity check --subject shaped_stack_adapter:OBJECT` as a user runs it (issue 51):

- a softmax over earlier layers' outputs that declares the papers' replicated streams is a finding under mHC's
  Eq. 3, whose message says what a faithful stack returns;
- a faithful mHC stack whose readout is the mean of the streams declares it (Capability(readout="mean")) and passes;
- a stack built without a width declares it (Capability(infers=("d",))) and passes: the width-0 refusal is not
  asked of it, saying why, and the rest of the refusal gate runs.
Each word is judged where the subject loads: a value nobody knows is a problem that says what to write."""
import pytest

from fidelity.gaterun.conformance import text_lines
from fidelity.gates.stream_layout import copies_read_out, require_copies_of_the_hidden, require_width_taken
from fidelity.mechanisms import Capability

import shaped_stack_adapter
from subject_check import conformance_of

BEHAVIOUR = "tests/gates/test_mhc_stack_behaviour.py::"
ZERO_BODIES = BEHAVIOUR + "test_with_every_body_zero_the_stack_returns_whole_copies_of_the_hidden"
ONE_BODY = BEHAVIOUR + "test_one_body_alone_adds_its_output_to_the_same_copies_of_the_hidden"
REFUSALS = ("tests/gates/test_mhc_stack.py::"
            "test_a_stack_without_a_body_or_below_width_one_is_refused_and_one_of_width_one_runs")


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    # DENSE is read at the behaviour gate alone; MEAN and WIDTHLESS pass every gate of Eq. 3: their whole runs
    return conformance_of("shaped_stack_adapter", ("DENSE", "MEAN", "WIDTHLESS"),
                          gate_files={"DENSE": ("test_mhc_stack_behaviour.py",)})


def _equation(conformance: dict, equation: str) -> dict:
    (eq,) = [e for e in conformance["equations"] if e["equation"] == equation]
    return eq


def test_a_softmax_over_earlier_layers_is_a_finding_under_eq3_saying_what_was_expected(runs):
    eq = _equation(runs["DENSE"], "mhc.eq3")
    assert eq["verdict"] == "finding", "\n".join(text_lines(eq))
    by_gate = {f["gate"]: f for f in eq["findings"]}
    assert ZERO_BODIES in by_gate, "\n".join(text_lines(eq))
    message = by_gate[ZERO_BODIES]["full_message"]
    assert "expected" in message and "whole copies of the hidden" in message, message


def test_a_faithful_stack_with_a_mean_readout_declares_it_and_passes(runs):
    eq = _equation(runs["MEAN"], "mhc.eq3")
    assert eq["verdict"] == "passed", "\n".join(text_lines(eq))
    assert eq["gates"][ZERO_BODIES] == eq["gates"][ONE_BODY] == "passed"
    assert not eq["findings"] and not eq["errors"]


def test_a_widthless_factory_declares_it_passes_and_is_not_asked_to_refuse_width_0(runs):
    eq = _equation(runs["WIDTHLESS"], "mhc.eq3")
    assert eq["verdict"] == "passed", "\n".join(text_lines(eq))
    assert eq["gates"][REFUSALS] == "passed"  # no body is still refused, and width 1 still runs
    assert not eq["findings"] and not eq["errors"]
    said = [r for r in eq["not_run_reasons"] if "width 0" in r]
    assert len(said) == 1 and "Capability(infers=('d',))" in said[0], eq["not_run_reasons"]


@pytest.mark.parametrize("words, problem", [
    ({"readout": "average"}, "Capability.readout: 'average' is not a readout; use one of ('sum', 'mean')"),
    ({"readout": "mean"}, "Capability.readout: 'mean' reads replicated streams; declare streams='replicated' with it"),
    ({"streams": "none", "readout": "mean"},
     "Capability.readout: 'mean' reads replicated streams; declare streams='replicated' with it"),
    ({"infers": ("dim",)}, "Capability.infers: 'dim' is not an argument a factory may leave to the package; "
                           "use ('d',) for a stack that takes its width from the hidden"),
    ({"infers": "d"}, "Capability.infers must be a tuple of argument names (e.g. ('d',)), got 'd'"),
])
def test_a_word_nobody_knows_is_a_problem_that_says_what_to_write(words, problem):
    assert Capability(("float32",), ("cpu",), ("autograd",), **words).problems == (problem,)


@pytest.mark.parametrize("words", [{"streams": "none"}, {"streams": "replicated", "readout": "mean"},
                                   {"streams": "replicated", "readout": "sum"}, {"infers": ("d",)}])
def test_each_new_word_is_a_declaration_without_problems(words):
    assert Capability(("float32",), ("cpu",), ("autograd",), **words).problems == ()


@pytest.mark.parametrize("words, copies, said", [
    ({"streams": "replicated"}, None, "replicated streams, read out as their sum"),
    ({"streams": "replicated", "readout": "mean"}, 1, "replicated streams, read out as their mean"),
    ({"streams": "none"}, 1, "held as one stream: n = 1"),
])
def test_the_layout_and_readout_say_how_many_copies_of_the_hidden_the_gates_expect(words, copies, said):
    subject = shaped_stack_adapter._subject("declared", shaped_stack_adapter.mean, **words)
    assert said in require_copies_of_the_hidden(subject, "mhc_stack")
    assert copies_read_out(subject, "mhc_stack") == copies


@pytest.mark.parametrize("words, said", [({}, "declares no stream layout"), ({"streams": "sliced"}, "streams='sliced'")])
def test_a_gate_of_copies_of_the_hidden_is_not_run_on_another_layout_saying_why(words, said):
    subject = shaped_stack_adapter._subject("declared", shaped_stack_adapter.mean, **words)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_copies_of_the_hidden(subject, "mhc_stack")
    assert said in str(skipped.value) and "streams='none'" in str(skipped.value)


def test_only_a_widthless_factory_is_spared_the_width_0_refusal():
    require_width_taken(shaped_stack_adapter.MEAN, "mhc_stack")  # returns: asked
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_width_taken(shaped_stack_adapter.WIDTHLESS, "mhc_stack")
    assert "it is not asked to refuse width 0" in str(skipped.value)
