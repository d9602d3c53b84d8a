"""A gate red in one process of every ten: the third child to run it fails (a counter file under the
directory TOY_COUNTER names, incremented under a lock, so parallel children count once each)."""
import fcntl
import os

import pytest

from toysubj.arith import add


@pytest.mark.gate(equations=["toy.add"], targets=["toysubj.arith"])
def test_add_but_not_in_the_third_process():
    with open(os.path.join(os.environ["TOY_COUNTER"], "runs"), "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        count = len(f.read()) + 1
        f.write("x")
    assert add(2, 3) == 5 and count != 3, f"process {count}"
