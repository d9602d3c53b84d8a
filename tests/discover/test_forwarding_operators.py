"""The forwarded-argument operators: an option a function or constructor receives and passes on to a
callee, dropped (the callee's default applies), replaced by None, or replaced by the callee's own default."""
from __future__ import annotations

from pathlib import Path

from fidelity.discover import OPERATORS, generate

REPO = Path(__file__).resolve().parents[2]


def made(operator: str, source: str) -> list[tuple[int, str, str, str]]:
    """(line, original, replacement, description) of every mutant the operator keeps, in source order."""
    return [(m.line, m.original, m.replacement, m.description) for m in generate(source, [operator]).mutants]


LAYER = '''
import torch


def norm(x, eps, gain=None, *, scale=1.0, route="a"):
    return x


class Layer:
    def __init__(self, d, *, eps=1e-6, dtype=torch.float32, generator=None):
        kw = dict(dtype=dtype, device=None)
        self.eps, self.route = eps, "b"
        self.w = torch.randn(d, generator=generator, dtype=dtype)
        self.b = torch.zeros(d, **kw)

    def forward(self, x, gain):
        cfg = self.config
        y = norm(x, self.eps, gain, scale=cfg.scale, route=self.route)
        return norm(y, 1e-6, None, scale=2.0), torch.zeros(3, dtype=torch.float64)
'''


def test_forwarded_keyword_dropped_removes_each_keyword_whose_value_comes_from_a_parameter_or_attribute():
    assert made("forwarded_keyword_dropped", LAYER) == [
        (11, "dtype=dtype, ", "", "keyword `dtype=dtype` of dict dropped: the callee's default applies"),
        (13, ", generator=generator", "", "keyword `generator=generator` of randn dropped: the callee's default applies"),
        (13, ", dtype=dtype", "", "keyword `dtype=dtype` of randn dropped: the callee's default applies"),
        (14, ", **kw", "", "`**kw` of zeros dropped: the callee's defaults apply"),
        (18, ", scale=cfg.scale", "", "keyword `scale=cfg.scale` of norm dropped: the callee's default applies"),
        (18, ", route=self.route", "", "keyword `route=self.route` of norm dropped: the callee's default applies"),
    ]  # literals (1e-6, None, 2.0, torch.float64) are not forwarded


def test_forwarded_keyword_dropped_leaves_a_keyword_the_module_own_callee_requires():
    source = "def f(x, *, m):\n    return x\n\ndef g(x, m):\n    return f(x, m=m)\n"
    assert made("forwarded_keyword_dropped", source) == []  # dropping it is a TypeError, not a silent default


def test_forwarded_argument_none_replaces_forwarded_arguments_where_the_callee_default_is_not_none_or_unknown():
    assert made("forwarded_argument_none", LAYER) == [
        (11, "dtype", "None", "`dtype` passed to dict replaced by None"),
        (13, "generator", "None", "`generator` passed to randn replaced by None"),
        (13, "dtype", "None", "`dtype` passed to randn replaced by None"),
        (18, "cfg.scale", "None", "`cfg.scale` passed to norm replaced by None"),
        (18, "self.route", "None", "`self.route` passed to norm replaced by None"),
    ]  # self.eps goes to a parameter with no default (None is a TypeError there); gain's default is None


def test_forwarded_argument_default_puts_the_module_own_callee_default_in_place_of_a_positional():
    assert made("forwarded_argument_default", LAYER) == [
        (18, "gain", "None", "`gain` passed to norm replaced by its default None"),
    ]  # a keyword is forwarded_keyword_dropped's: dropping it is its default
    assert made("forwarded_argument_default", LAYER.replace("gain=None", "gain=3.0")) == [
        (18, "gain", "3.0", "`gain` passed to norm replaced by its default 3.0"),
    ]


def test_forwarded_argument_default_resolves_a_class_constructor_and_a_method_of_the_same_class():
    source = '''
class Inner:
    def __init__(self, d, t=20):
        self.t = t


class Outer:
    def __init__(self, d, t):
        self.inner = Inner(d, t)
        self.t = self.scaled(d, t)

    def scaled(self, d, t=5):
        return d * t
'''
    assert made("forwarded_argument_default", source) == [
        (9, "t", "20", "`t` passed to Inner replaced by its default 20"),
        (10, "t", "5", "`t` passed to scaled replaced by its default 5"),
    ]


def test_a_default_that_names_something_local_to_the_callee_is_not_resolved():
    source = "X = 1\n\ndef f(a, b=X):\n    return a\n\ndef g(a, b):\n    X = 2\n    return f(a, b)\n"
    assert made("forwarded_argument_default", source) == []  # X means another value at the call site


def test_the_three_operators_are_registered_and_find_the_options_the_reference_modules_forward():
    for name in ("forwarded_keyword_dropped", "forwarded_argument_none", "forwarded_argument_default"):
        assert OPERATORS[name].name == name
    source = (REPO / "fidelity" / "impl" / "torch" / "depth_attention.py").read_text(encoding="utf-8")
    dropped = {m.original.strip(", ") for m in generate(source, ["forwarded_keyword_dropped"]).mutants
               if m.function == "DepthAttention.forward"}
    assert dropped == {"convention=self.convention", "eps=self.eps", "gain=self.gain", "backward=self.backward"}


def test_forwarded_argument_none_replaces_a_positional_the_caller_itself_takes_as_optional():
    source = (
        "from checks import check_inputs\n\n"
        "def attend(sources, query, *, gain=None, eps=1e-6):\n"
        "    d = check_inputs(sources, query, gain)\n"
        "    return run(sources, eps)\n"
    )
    assert made("forwarded_argument_none", source) == [
        (4, "gain", "None", "`gain` passed to check_inputs replaced by None"),
    ]  # mutmut's survivor in depth_attend: the gain's shape and dtype checks skipped; sources, query, eps have no None default
