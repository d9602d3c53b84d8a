"""reach_of: which executed lines mean a mutant's code ran (so only the gate instances that ran
it need to run the mutant), checked against what the tracer sees when the code runs."""
import ast
import textwrap

import pytest

from fidelity.discover.reach import reach_of
from fidelity.perturb.line_trace import LinesExecuted, reaches

SOURCE = textwrap.dedent('''\
    EPS = 1e-6                              # 1


    def scaled(x, factor=2.0):              # 4
        if x < 0:                           # 5
            x = -x                          # 6
        y = (x *                            # 7
             factor)                        # 8
        return y + EPS                      # 9


    def outer(x):                           # 12
        def inner(y, k=3):                  # 13
            return y * k                    # 14
        return inner(x)                     # 15


    def never(x):                           # 18
        return x - 1                        # 19

    twice = lambda x: x * 2                 # 21
''')


def where(first, last=None):
    return reach_of(ast.parse(SOURCE), first, last or first)


@pytest.mark.parametrize("span, expected", [
    ((1, 1), None),                           # module level: every instance ran it at import
    ((4, 4), {"call": 4}),                    # a default: it acts when the function is called
    ((5, 5), {"lines": [5, 5]}),              # an if's test: its header only
    ((6, 6), {"lines": [6, 6]}),              # a statement in its body
    ((8, 8), {"lines": [7, 8]}),              # inside a statement on two lines: the whole statement
    ((6, 7), {"lines": [6, 7]}),              # two statements swapped
    ((13, 13), {"lines": [13, 13]}),          # a nested def's default: it runs as a statement of outer
    ((14, 14), {"lines": [14, 14]}),
    ((21, 21), {"lines": [21, 21]}),          # a lambda's body
], ids=["module-level", "default", "if-header", "if-body", "two-line-statement", "two-statements",
        "nested-default", "nested-body", "lambda"])
def test_the_reach_of_a_span(span, expected):
    assert where(*span) == expected


def _run(tmp_path, call):
    path = tmp_path / "reachtoy.py"
    path.write_text(SOURCE)
    namespace: dict = {}
    exec(compile(SOURCE, str(path), "exec"), namespace)
    with LinesExecuted([str(path)]) as trace:
        call(namespace)
    return trace.to_json()[str(path)]


def test_a_call_that_takes_a_branch_reaches_its_lines_and_not_the_others(tmp_path):
    executed = _run(tmp_path, lambda ns: (ns["scaled"](3.0), ns["outer"](2.0)))
    assert reaches(executed, where(4)) and reaches(executed, where(8)) and reaches(executed, where(5))
    assert not reaches(executed, where(6))           # x >= 0: the branch body never ran
    assert not reaches(executed, where(19))          # never() was not called
    assert reaches(executed, where(13)) and reaches(executed, where(14))
    assert reaches(executed, where(1))               # module-level code: always


def test_a_default_is_reached_only_by_calling_its_function(tmp_path):
    executed = _run(tmp_path, lambda ns: ns["outer"](2.0))
    assert where(12) == {"call": 12}
    assert reaches(executed, where(12))          # outer was called
    assert not reaches(executed, where(4))       # scaled was not: its default never acted
