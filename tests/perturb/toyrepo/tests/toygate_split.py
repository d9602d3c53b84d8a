"""One toy gate over two subjects: each instance targets only the module its subject uses,
as the gate conftest marks each (subject, device) instance in the real suite."""
import pytest

from fidelity.gates.readings import record
from toysubj import arith, twice

CASES = [
    pytest.param(lambda: arith.add(2.0, 2.0), id="arith", marks=pytest.mark.gate_targets("toysubj.arith")),
    pytest.param(lambda: twice.double(2.0), id="twice", marks=pytest.mark.gate_targets("toysubj.twice")),
    # a device the machine lacks, known at collection (the gate conftest marks CUDA instances so)
    pytest.param(lambda: twice.double(2.0), id="twice-absent-device",
                 marks=[pytest.mark.gate_targets("toysubj.twice"), pytest.mark.skip(reason="not run: no such device")]),
]


@pytest.mark.gate(equations=["toy.four"])
@pytest.mark.parametrize("four", CASES)
def test_four(four):
    err = record(abs(four() - 4.0))
    assert err == 0.0, f"|four - 4| = {err}"
