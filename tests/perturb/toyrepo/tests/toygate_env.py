"""A toy gate whose reading is a variable of the run's environment."""
import os

import pytest

from fidelity.gates.readings import record
from toysubj import arith


@pytest.mark.gate(equations=["toy.env"], targets=["toysubj.arith"])
def test_add_under_the_run_environment():
    record(float(os.environ.get("TOY_RUN", "0")))
    assert arith.add(1.0, 1.0) == 2.0, "add(1, 1) != 2"
