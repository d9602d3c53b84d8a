"""A stack's stream layout, declared in its capability (Capability(streams=...)), as the gates read it: a gate that
holds an identity of one layout runs where that layout is declared and is not run elsewhere, saying why; a
layout nobody knows is a problem of the declaration, named when the subject loads."""
import pytest

from fidelity.gates.stream_layout import require_layout
from fidelity.mechanisms import Capability

import stack_adapter


def test_the_declared_layout_runs_the_gate():
    require_layout(stack_adapter.SUBJECT, "mhc_stack", "replicated")  # returns: the instance runs


@pytest.mark.parametrize("streams, said", [("", "declares no stream layout"), ("sliced", "declares streams='sliced'")])
def test_another_layout_or_none_is_not_run_with_the_reason(streams, said):
    subject = stack_adapter._subject("hiddenmhc-other", "MHCStack", streams=streams)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_layout(subject, "mhc_stack", "replicated")
    assert said in str(skipped.value) and "Capability(streams='replicated')" in str(skipped.value)


def test_a_layout_nobody_knows_is_a_problem_of_the_declaration():
    problems = Capability(("float32",), ("cpu",), ("autograd",), streams="replicate").problems
    assert problems == ("Capability.streams: 'replicate' is not a stream layout; use one of ('replicated', 'sliced', 'none')",)
    assert Capability(("float32",), ("cpu",), ("autograd",), streams="sliced").problems == ()
