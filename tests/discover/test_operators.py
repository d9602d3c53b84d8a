"""The mutation operators of `fidelity discover`: each one's exact mutants on a small source, and the
properties every mutant has (one span replaced, compiles, changes something, any decorator mutated)."""
from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from fidelity.discover import OPERATORS, Mutant, Operator, apply, generate
from fidelity.discover.operators import Context

REPO = Path(__file__).resolve().parents[2]
REFERENCE = ("sinkhorn", "mhc", "depth_attention")


def made(operator: str, source: str) -> list[tuple[int, str, str, str]]:
    """(line, original, replacement, description) of every mutant the operator keeps, in source order."""
    return [(m.line, m.original, m.replacement, m.description) for m in generate(source, [operator]).mutants]


# --- input-validation guards ------------------------------------------------------------

GUARDED = '''
def project(x, n):
    if x.dim() < 2 or x.shape[-1] != n:
        raise ValueError("x must be [..., n]")
    assert n > 0 and x.numel() > 0, "empty"
    return x / n
'''


def test_guard_bool_swapped_turns_or_into_and_and_back_in_a_raising_if_and_an_assert():
    assert made("guard_bool_swapped", GUARDED) == [
        (3, "or", "and", "or -> and"),
        (5, "and", "or", "and -> or"),
    ]


def test_guard_boundary_moved_moves_each_order_comparison_of_a_guard_by_its_equality():
    assert made("guard_boundary_moved", GUARDED) == [
        (3, "<", "<=", "x.dim() < 2 -> x.dim() <= 2"),
        (5, ">", ">=", "n > 0 -> n >= 0"),
        (5, ">", ">=", "x.numel() > 0 -> x.numel() >= 0"),
    ]


def test_guard_boundary_moved_leaves_comparisons_outside_guards_alone():
    assert made("guard_boundary_moved", "def f(x):\n    if x < 0:\n        x = -x\n    return x < 1\n") == []


def test_guard_removed_replaces_an_if_that_raises_with_pass_but_not_an_elif_or_an_if_with_work():
    source = '''
def sinkhorn(logits, t_max):
    if t_max < 0:
        raise ValueError(f"t_max must be >= 0, got {t_max}")
    if t_max == 0:
        return logits.exp()
    elif t_max > 100:
        raise ValueError("too many")
    return logits
'''
    guard = 'if t_max < 0:\n        raise ValueError(f"t_max must be >= 0, got {t_max}")'
    assert made("guard_removed", source) == [(3, guard, "pass", "guard `if t_max < 0` removed")]


def test_guard_removed_replaces_an_assert_with_pass():
    assert made("guard_removed", GUARDED) == [
        (3, 'if x.dim() < 2 or x.shape[-1] != n:\n        raise ValueError("x must be [..., n]")', "pass",
         "guard `if x.dim() < 2 or x.shape[-1] != n` removed"),
        (5, 'assert n > 0 and x.numel() > 0, "empty"', "pass", "guard `assert n > 0 and x.numel() > 0` removed"),
    ]


def test_check_call_removed_replaces_a_check_or_validate_call_statement_but_not_one_whose_value_is_used():
    source = '''
class Layer:
    def forward(self, x):
        self._check_state(x)
        validate_inputs(x)
        checked = check_shape(x)
        x.check()
        return x + checked
'''
    assert made("check_call_removed", source) == [
        (4, "self._check_state(x)", "pass", "call `self._check_state(x)` removed"),
        (5, "validate_inputs(x)", "pass", "call `validate_inputs(x)` removed"),
        (7, "x.check()", "pass", "call `x.check()` removed"),
    ]


# --- numeric literals and defaults ----------------------------------------------------


def test_numeric_literal_scales_zeroes_ones_and_flips_floats_and_steps_integers_by_one():
    source = "def gate(x, eps=1e-6):\n    y = 2.0 * x + 1\n    return y[0] ** -0.5 + 0.0\n"
    result = generate(source, ["numeric_literal"])
    assert [(m.line, m.original, m.replacement) for m in result.mutants] == [
        (2, "2.0", "20.0"), (2, "2.0", "0.2"), (2, "2.0", "0.0"), (2, "2.0", "1.0"), (2, "2.0", "-2.0"),
        (2, "1", "2"), (2, "1", "0"),
        (3, "0", "1"), (3, "0", "-1"),
        (3, "-0.5", "-5.0"), (3, "-0.5", "-0.05"), (3, "-0.5", "0.0"), (3, "-0.5", "1.0"), (3, "-0.5", "0.5"),
        (3, "0.0", "1.0"),
    ]  # the default eps is parameter_default's
    assert result.mutants[0].description == "2.0 -> 20.0"
    # 1 - 1 = 0 repeats "to 0"; 0 + 0, 0.0 * 10, 0.0 / 10 and 0.0 -> 0.0 change nothing
    assert result.dropped == {"does_not_compile": 0, "no_change": 4, "duplicate": 1}


def test_numeric_literal_parenthesises_a_negative_replacement_where_the_minus_would_bind_differently():
    mutants = generate("y = 2.0 ** x\n", ["numeric_literal"]).mutants
    assert ("2.0", "(-2.0)") in [(m.original, m.replacement) for m in mutants]


def test_parameter_default_changes_numeric_defaults_and_flips_boolean_ones():
    source = 'def rms_norm(x, gain=None, eps=1e-6, *, t_max=20, learned=False, name="rms"):\n    return x\n'
    assert made("parameter_default", source) == [
        (1, "1e-6", "1e-05", "eps=1e-6 -> eps=1e-05"),
        (1, "1e-6", "1e-07", "eps=1e-6 -> eps=1e-07"),
        (1, "1e-6", "0.0", "eps=1e-6 -> eps=0.0"),
        (1, "1e-6", "1.0", "eps=1e-6 -> eps=1.0"),
        (1, "1e-6", "-1e-06", "eps=1e-6 -> eps=-1e-06"),
        (1, "20", "21", "t_max=20 -> t_max=21"),
        (1, "20", "19", "t_max=20 -> t_max=19"),
        (1, "20", "0", "t_max=20 -> t_max=0"),
        (1, "False", "True", "learned=False -> learned=True"),
    ]


# --- axes, transposes, reductions ---------------------------------------------------------

AXES = '''
import torch

def attend(q, k, n):
    s = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
    return torch.cat([s.sum(0), s.logsumexp(-2, keepdim=True)], dim=1), s.shape[-1], s[0]
'''


def test_dim_argument_moves_keyword_and_positional_axes_and_shape_indices_to_neighbours_and_the_other_sign():
    assert [(line, original, replacement, d) for line, original, replacement, d in made("dim_argument", AXES)] == [
        (5, "-1", "-2", "transpose(-1, ..) -> transpose(-2, ..)"),
        (5, "-1", "0", "transpose(-1, ..) -> transpose(0, ..)"),
        (5, "-1", "1", "transpose(-1, ..) -> transpose(1, ..)"),
        (5, "-2", "-3", "transpose(.., -2) -> transpose(.., -3)"),
        (5, "-2", "-1", "transpose(.., -2) -> transpose(.., -1)"),
        (5, "-2", "2", "transpose(.., -2) -> transpose(.., 2)"),
        (5, "-1", "-2", "dim=-1 -> dim=-2"),
        (5, "-1", "0", "dim=-1 -> dim=0"),
        (5, "-1", "1", "dim=-1 -> dim=1"),
        (6, "0", "-1", "sum(0) -> sum(-1)"),
        (6, "0", "1", "sum(0) -> sum(1)"),
        (6, "-2", "-3", "logsumexp(-2, ..) -> logsumexp(-3, ..)"),
        (6, "-2", "-1", "logsumexp(-2, ..) -> logsumexp(-1, ..)"),
        (6, "-2", "2", "logsumexp(-2, ..) -> logsumexp(2, ..)"),
        (6, "1", "0", "dim=1 -> dim=0"),
        (6, "1", "2", "dim=1 -> dim=2"),
        (6, "1", "-1", "dim=1 -> dim=-1"),
        (6, "-1", "-2", "shape[-1] -> shape[-2]"),
        (6, "-1", "0", "shape[-1] -> shape[0]"),
        (6, "-1", "1", "shape[-1] -> shape[1]"),
    ]


def test_numeric_literal_leaves_the_axes_to_dim_argument():
    assert [m.original for m in generate(AXES, ["numeric_literal"]).mutants] == ["0", "0"]  # s[0] only: 1, -1


def test_keyword_flag_flips_keepdim_and_every_other_boolean_keyword():
    source = "def normalise(x):\n    return x - x.logsumexp(dim=-1, keepdim=True), x.var(unbiased=False)\n"
    assert made("keyword_flag", source) == [
        (2, "True", "False", "keepdim=True -> keepdim=False"),
        (2, "False", "True", "unbiased=False -> unbiased=True"),
    ]


def test_transpose_removed_keeps_the_operand_of_mT_T_a_transpose_method_and_torch_transpose():
    source = (
        "import torch\n\ndef mix(h, x, w):\n"
        "    return h.mT @ x, (w @ x).T, x.transpose(-1, -2), torch.transpose(w, 0, 1)\n"
    )
    assert made("transpose_removed", source) == [
        (4, "h.mT", "h", "`.mT` removed"),
        (4, "(w @ x).T", "(w @ x)", "`.T` removed"),
        (4, "x.transpose(-1, -2)", "x", "`.transpose(-1, -2)` removed"),
        (4, "torch.transpose(w, 0, 1)", "w", "`torch.transpose(w, 0, 1)` removed"),
    ]


def test_transpose_inserted_transposes_either_operand_of_a_matrix_product_keeping_its_parentheses():
    assert made("transpose_inserted", "def mix(h, x, b):\n    return h @ (x + b) @ x.sum(0)\n") == [
        (2, "h", "h.mT", "h -> h.mT in @"),
        (2, "h @ (x + b)", "(h @ (x + b)).mT", "h @ (x + b) -> (h @ (x + b)).mT in @"),  # the outer product's left
        (2, "(x + b)", "(x + b).mT", "(x + b) -> (x + b).mT in @"),
        (2, "x.sum(0)", "x.sum(0).mT", "x.sum(0) -> x.sum(0).mT in @"),
    ]


def test_reduction_swap_swaps_sum_mean_max_min_amax_amin_and_softmax_log_softmax_but_not_logsumexp():
    source = (
        "import torch\n\ndef pool(x):\n"
        "    return x.sum(dim=-1), torch.amax(x, dim=0), x.max(), torch.softmax(x, 0), x.logsumexp(0)\n"
    )
    assert made("reduction_swap", source) == [
        (4, "sum", "mean", "sum -> mean"),
        (4, "amax", "amin", "amax -> amin"),
        (4, "max", "min", "max -> min"),
        (4, "softmax", "log_softmax", "softmax -> log_softmax"),
    ]


# --- terms, statements, arguments, loops ------------------------------------------------------


def test_term_dropped_drops_each_operand_of_a_sum_or_product_chain_but_never_a_string_concatenation():
    source = 'def residual(a, b, c, d):\n    y = a + b - c\n    return (y * d) / 2.0, "s" + "t", a - b\n'
    assert made("term_dropped", source) == [
        (2, "a + ", "", "drop term `a`"),
        (2, " + b", "", "drop term `+ b`"),
        (2, " - c", "", "drop term `- c`"),
        (3, "(y * d)", "1", "drop factor `(y * d)`"),  # a / b without its numerator is 1 / b
        (3, "y * ", "", "drop factor `y`"),
        (3, " * d", "", "drop factor `* d`"),
        (3, " / 2.0", "", "drop factor `/ 2.0`"),
        (3, "a - ", "-", "drop term `a`"),  # a - b without a is -b
        (3, " - b", "", "drop term `- b`"),
    ]


def test_assignments_swapped_swaps_two_consecutive_assignments_with_their_comments():
    source = "def step(g, y):\n    g = g * y  # scale\n    y = y + 1\n    print(g)\n    a = b = y\n    return g, y, a\n"
    assert made("assignments_swapped", source) == [
        (2, "g = g * y  # scale\n    y = y + 1", "y = y + 1\n    g = g * y  # scale",
         "swap `g = g * y` and `y = y + 1`"),
    ]


def test_arguments_swapped_swaps_adjacent_plain_positional_arguments_only():
    source = "def call(q, k, v, self):\n    return attend(q, k, self.v[0]), attend(q, k + 1, v), isinstance(q, int)\n"
    assert made("arguments_swapped", source) == [
        (2, "q, k", "k, q", "swap arguments `q`, `k` of attend"),
        (2, "k, self.v[0]", "self.v[0], k", "swap arguments `k`, `self.v[0]` of attend"),
    ]


def test_range_bound_moves_the_stop_of_range_n_and_both_ends_of_range_a_b_by_one():
    source = (
        "def iterate(x, t_max, n):\n    for _ in range(t_max):\n        x = x + 1\n"
        "    for i in range(1, n * 2):\n        x = x - i\n    return x\n"
    )
    assert made("range_bound", source) == [
        (2, "t_max", "t_max - 1", "range bound t_max -> t_max - 1"),
        (2, "t_max", "t_max + 1", "range bound t_max -> t_max + 1"),
        (4, "1", "0", "range bound 1 -> 0"),
        (4, "1", "2", "range bound 1 -> 2"),
        (4, "n * 2", "n * 2 - 1", "range bound n * 2 -> n * 2 - 1"),
        (4, "n * 2", "n * 2 + 1", "range bound n * 2 -> n * 2 + 1"),
    ]


# --- gradients, activations, dtypes -----------------------------------------------------------

OUTPUTS = '''
def forward(self, x):
    self.n, self.eps = n, 1e-6
    h = self.w @ x + self.b
    d = x.shape[-1]
    out, aux = self.inner(h)
    return h, out * 2, None
'''


def test_detach_inserted_detaches_returned_and_assigned_values_but_not_shapes_configuration_or_unpacked_calls():
    assert made("detach_inserted", OUTPUTS) == [
        (4, "self.w @ x + self.b", "(self.w @ x + self.b).detach()", "detach `self.w @ x + self.b`"),
        (7, "h", "h.detach()", "detach `h`"),
        (7, "out * 2", "(out * 2).detach()", "detach `out * 2`"),
    ]


def test_downcast_inserted_casts_returned_and_assigned_values_to_float32_but_not_strings():
    source = 'def forward(x, w):\n    y = x @ w\n    return y.sum(), f"{y}"\n'
    assert made("downcast_inserted", source) == [
        (2, "x @ w", "(x @ w).float()", "downcast `x @ w` to float32"),
        (3, "y.sum()", "y.sum().float()", "downcast `y.sum()` to float32"),
    ]


def test_dtype_narrowed_narrows_float64_and_double_to_float32_and_float32_to_float16_defaults_included():
    source = (
        "import torch\n\ndef make(n, dtype=torch.float32):\n"
        "    return torch.zeros(n, dtype=torch.float64), torch.ones(n, dtype=torch.double).to(torch.int64)\n"
    )
    assert made("dtype_narrowed", source) == [
        (3, "float32", "float16", "float32 -> float16"),
        (4, "float64", "float32", "float64 -> float32"),
        (4, "double", "float32", "double -> float32"),
    ]


def test_activation_swap_swaps_sigmoid_tanh_exp_relu_within_what_each_namespace_has():
    source = (
        "import torch\nimport torch.nn.functional as F\n\ndef gates(x):\n"
        "    return torch.sigmoid(x), F.relu(x), x.exp(), math.exp(1.0)\n"
    )
    assert made("activation_swap", source) == [
        (5, "sigmoid", "tanh", "sigmoid -> tanh"),
        (5, "sigmoid", "exp", "sigmoid -> exp"),
        (5, "sigmoid", "relu", "sigmoid -> relu"),
        (5, "relu", "sigmoid", "relu -> sigmoid"),  # there is no F.exp
        (5, "relu", "tanh", "relu -> tanh"),
        (5, "exp", "sigmoid", "exp -> sigmoid"),
        (5, "exp", "tanh", "exp -> tanh"),
        (5, "exp", "relu", "exp -> relu"),
        (5, "exp", "tanh", "exp -> tanh"),  # math has exp and tanh only
    ]


def test_activation_factor_sets_the_constant_before_an_activation_to_one_and_to_twice_its_value():
    source = "import torch\n\ndef gates(x):\n    return 2.0 * torch.sigmoid(x), x.tanh() * 3, 0.5 * x\n"
    assert made("activation_factor", source) == [
        (4, "2.0", "1.0", "factor 2.0 -> 1.0"),
        (4, "2.0", "4.0", "factor 2.0 -> 4.0"),
        (4, "3", "1", "factor 3 -> 1"),
        (4, "3", "6", "factor 3 -> 6"),
    ]
    assert [m.original for m in generate(source, ["numeric_literal"]).mutants] == ["0.5"] * 5  # the factors are taken


# --- what every operator and mutant shares ------------------------------------------------------


def test_every_operator_is_registered_under_its_snake_case_name_with_a_one_paragraph_doc():
    assert len(OPERATORS) == 23
    for name, operator in OPERATORS.items():
        assert operator.name == name and re.fullmatch(r"[a-z]+(_[a-z]+)*", name)
        assert len(operator.doc) > 80 and "\n\n" not in operator.doc, name


def test_an_operator_alone_yields_its_mutants_from_a_tree_and_its_source_before_any_filter():
    source = "y = x.sum(dim=0) * 1.\n"
    mutants = list(OPERATORS["numeric_literal"].mutants(ast.parse(source), source))
    assert [m.replacement for m in mutants] == ["10.0", "0.1", "0.0", "1.0", "-1.0"]  # "1.0" is 1. again
    assert all(isinstance(m, Mutant) and m.operator == "numeric_literal" and m.function is None for m in mutants)


def test_a_function_under_staticmethod_and_another_decorator_gets_mutants():
    source = '''
import torch

class Adjoint(torch.autograd.Function):
    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return grad - torch.exp(y) * grad.sum(dim=-1, keepdim=True)
'''
    mutants = generate(source).mutants
    assert {m.function for m in mutants} == {"Adjoint.backward"}
    operators = {m.operator for m in mutants}
    assert {"dim_argument", "keyword_flag", "term_dropped", "activation_swap", "reduction_swap"} <= operators


def test_docstrings_strings_annotations_raise_and_assert_messages_are_never_mutated():
    source = '''
"""Module doc: x.sum(dim=-1) * 2.0 + 1"""
from typing import Annotated

def f(x: Annotated[int, 3] = 1, *, n: "int" = 2) -> Annotated[float, 1.5]:
    """Doc: torch.sigmoid(x) @ w with dim=-1."""
    y: Annotated[int, 7] = x + 2
    if x < 0:
        raise ValueError(f"got {x + 1} and {x.sum(dim=-1)}", 3)
    assert y > 0, f"{y * 2}"
    return "a" + "b", y
'''
    protected = ['"""Module doc', "Annotated[int, 3]", '"int"', "Annotated[float, 1.5]", '"""Doc',
                 "Annotated[int, 7]", 'ValueError(f"got', 'f"{y * 2}"', '"a" + "b"']
    spans = []
    for text in protected:
        start = source.index(text)
        end = source.index(")", start) + 1 if text.startswith("ValueError") else start + len(text)
        if text.startswith('"""'):
            end = source.index('"""', start + 3) + 3
        spans.append((start, end))
    mutants = generate(source).mutants
    assert mutants  # the code itself is mutated
    for m in mutants:
        for start, end in spans:
            outside = m.end <= start or m.start >= end
            assert outside or (m.start <= start and m.end >= end), (m.description, source[start:end])  # or all of it


def test_a_mutant_that_does_not_compile_is_dropped_and_counted():
    class Broken(Operator):
        """Replaces every return value with a syntax error, and the first with valid code."""

        name = "broken"

        def mutants_in(self, ctx: Context):
            for i, node in enumerate(n for n in ctx.nodes if isinstance(n, ast.Return)):
                yield ctx.replace_node(self.name, node.value, "x" if i == 0 else "x +", "broken")

    result = generate("def f(x, y):\n    return y\n\ndef g(x):\n    return x * 2\n", [Broken()])
    assert [(m.line, m.replacement) for m in result.mutants] == [(2, "x")]
    assert result.dropped == {"does_not_compile": 1, "no_change": 0, "duplicate": 0}


def test_a_mutant_that_changes_nothing_textually_or_in_its_ast_is_dropped_and_counted():
    # "to 1" rewrites 1. as 1.0 (same AST), "x10" of 0 is 0 (same text)
    result = generate("y = x * 1.\nz = 0\n", ["numeric_literal"])
    assert [m.replacement for m in result.mutants] == ["10.0", "0.1", "0.0", "-1.0", "1", "-1"]
    assert result.dropped == {"does_not_compile": 0, "no_change": 2, "duplicate": 0}


def test_a_mutant_repeating_an_earlier_operators_source_is_dropped_as_a_duplicate():
    result = generate("for i in range(3):\n    pass\n", ["numeric_literal", "range_bound"])
    assert [(m.operator, m.replacement) for m in result.mutants] == [
        ("numeric_literal", "4"), ("numeric_literal", "2"), ("numeric_literal", "0")]
    assert result.dropped["duplicate"] == 2


def test_an_unknown_operator_name_is_an_error_naming_the_known_ones():
    with pytest.raises(KeyError, match="unknown mutation operator 'typo'.*dim_argument"):
        generate("x = 1\n", ["typo"])


def test_offsets_are_characters_even_after_non_ascii_text_on_the_same_line():
    source = 'y = f("σ→ε", 2.0)  # ö\n'
    mutant = generate(source, ["numeric_literal"]).mutants[0]
    assert (mutant.original, mutant.source) == ("2.0", 'y = f("σ→ε", 20.0)  # ö\n')


def test_apply_refuses_a_source_whose_span_no_longer_holds_the_original():
    mutant = generate("y = 2.0 * x\n", ["numeric_literal"]).mutants[0]
    assert apply("y = 2.0 * x\n", mutant) == mutant.source == "y = 20.0 * x\n"
    with pytest.raises(ValueError, match="no longer holds"):
        apply("y = 3.0 * x\n", mutant)


def test_the_function_is_the_dotted_name_of_the_innermost_def_and_none_at_module_level():
    source = (
        "SCALE = 2.0\n\nclass A:\n    def f(self):\n"
        "        def inner(x):\n            return x * 3.0\n        return inner\n"
    )
    functions = {m.original: m.function for m in generate(source, ["numeric_literal"]).mutants}
    assert functions == {"2.0": None, "3.0": "A.f.inner"}


# --- the reference implementations -----------------------------------------------------------------


@pytest.fixture(scope="module")
def reference() -> dict[str, tuple[str, list[Mutant]]]:
    out = {}
    for name in REFERENCE:
        source = (REPO / "fidelity" / "impl" / "torch" / f"{name}.py").read_text(encoding="utf-8")
        out[name] = (source, generate(source).mutants)
    return out


def _line_of(source: str, offset: int) -> int:
    return source.count("\n", 0, offset) + 1


def test_every_mutant_of_the_reference_compiles_and_differs_from_it_in_exactly_its_span(reference):
    for name, (source, mutants) in reference.items():
        assert [m.start for m in mutants] == sorted(m.start for m in mutants), name
        for m in mutants:
            mutated = m.source
            assert source[m.start:m.end] == m.original and m.original != m.replacement, (name, m)
            assert mutated[:m.start] == source[:m.start] and mutated[m.start:].endswith(source[m.end:]), (name, m)
            assert mutated[m.start:len(mutated) - (len(source) - m.end)] == m.replacement, (name, m)
            assert (m.line, m.end_line) == (_line_of(source, m.start), _line_of(source, max(m.start, m.end - 1)))
            compile(mutated, f"{name}-mutant", "exec")


def test_the_reference_gets_mutants_of_every_operator_that_applies_to_it(reference):
    counts = {name: Counter(m.operator for m in mutants) for name, (_, mutants) in reference.items()}
    table = "\n".join(f"{op:22}" + "".join(f"{counts[n][op]:>17}" for n in REFERENCE) for op in OPERATORS)
    message = f"mutants per operator ({', '.join(REFERENCE)}):\n{table}"
    # none of the three files transposes anything (there is nothing to remove)
    assert not any(re.search(r"\.m?T\b|transpose\(|\.t\(\)", source) for source, _ in reference.values()), message
    covered = {op for c in counts.values() for op in c}
    # nor passes a forwarded positional argument to a callee of its own that has a default (rmsnorm.py does)
    assert covered == set(OPERATORS) - {"transpose_removed", "forwarded_argument_default"}, message
    assert all(sum(c.values()) > 50 for c in counts.values()), message


def test_the_hand_written_backwards_under_staticmethod_and_once_differentiable_get_mutants(reference):
    expected = {"term_dropped", "detach_inserted", "downcast_inserted", "reduction_swap", "keyword_flag",
                "assignments_swapped"}
    for name, function in (("sinkhorn", "_SinkhornManual.backward"),
                           ("depth_attention", "_DepthAttendManual.backward")):
        operators = {m.operator for m in reference[name][1] if m.function == function}
        assert expected <= operators, (function, operators)
