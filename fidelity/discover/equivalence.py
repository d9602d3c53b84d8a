"""Is a surviving mutant a different function (a blind spot) or the same one (equivalent)? Decided
by running both, never guessed.

The original and the mutated source are each executed as a fresh module object (sys.modules is
untouched). Every probe calls one public entry of the module in both, in float64, on seeded
random inputs, with its optional arguments left at their defaults and given in turn, and on
inputs outside the contract (a count of -1 or 0, a misshaped tensor), and compares what each
does: the floating outputs and the gradients of a random projection of them with respect to
every floating input, or the exception it refused the input with (a guard the mutant lost
accepts what the original refuses). Different anywhere beyond the bound: a blind spot, with the smallest
input that showed it and the difference. Equal on every probe that executed the mutated lines
(traced): equivalent, with the inputs tried. No probe that runs on the original reaches the
mutated lines: undecided (never counted as equivalent). A mutant of import-time lines (module or
class level, which no trace sees) whose module, executed, binds every name to an equal value
(same_program.py: two independent module-level assignments swapped) is equivalent before any
probe: it is the same program.

Probes come from the mechanisms of the subjects whose code this module is (their Protocols give
every argument's shape, e.g. "[L, ..., d]"), for the module's other public functions from a plain
float64 tensor per required argument where the original accepts one, and for its module classes
from module_probes.py (built on each side with one seed, called twice, compared by name).

A mutated default of a signature runs at import, not in a call: a probe reaches it when it calls
that function with the argument left out; a mutated class-level statement (a dataclass field's
default), when it runs a method of that class.
"""
from __future__ import annotations

import ast
import inspect
import itertools
import re
import sys
import types
from typing import Any, Callable

import torch

from fidelity.discover.reach import reach_of
from fidelity.discover.same_program import same_program
from fidelity.discover.probe import REFUSALS, SIZES, NoProbe, Probe, random_tensor

BOUND = 1e-9          # relative: float64 noise of reordered arithmetic is ~1e-15; a defect is far above
SEEDS = (0, 1, 2, 3)  # each probe is drawn with these seeds, at two sizes
DISTINCT_AXES = "two leading axes, every axis its own size"
SAME_PROGRAM = "import: the mutated module binds every name to a value equal to the original's (same_program.py)"


def load(name: str, path: str, source: str) -> types.ModuleType:
    """`source` executed as a new module object named `name` (its package's relative imports work).

    A dataclass looks its module up in sys.modules: an importable module is imported first (the real
    one), one nothing can import (a file of a test) is there only while it executes."""
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = name.rpartition(".")[0]
    absent = name not in sys.modules and not _imported(name)
    if absent:
        sys.modules[name] = module
    try:
        exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - our own or the mutant's source
    finally:
        if absent:
            sys.modules.pop(name, None)
    return module


def _imported(name: str) -> bool:
    import importlib

    try:
        importlib.import_module(name)
        return True
    except Exception:  # not importable (or broken): the fresh copy stands alone
        return False


def _bound_name(module_name: str, fn) -> str:
    """The name under which `module_name` holds `fn`: a decorated function's __qualname__ may name a closure
    (`memo.<locals>.wrapper`) that no attribute path reaches; otherwise its __qualname__."""
    if "<locals>" not in fn.__qualname__:
        return fn.__qualname__
    held = vars(sys.modules[module_name]) if module_name in sys.modules else {}
    return next((name for name, value in held.items() if value is fn), fn.__qualname__)


# ---------------------------------------------------------------- inputs

def _shape(spec: str, sizes: dict, lead: tuple[int, ...] = (2,)) -> list[int] | None:
    """'[L, ..., d]' -> [3, 2, 4] with the `lead` axes where it says '...'; None for a shape we cannot
    read. Every letter needs a size in `sizes` (axis_sizes gives the unknown ones theirs)."""
    inner = spec.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        return None
    dims = []
    for token in (t.strip() for t in inner[1:-1].split(",") if t.strip()):
        if token in ("...", ".."):
            dims += list(lead)
        elif re.fullmatch(r"[A-Za-z]+", token):
            if token not in sizes:
                return None
            dims.append(sizes[token])
        elif re.fullmatch(r"\d+", token):
            dims.append(int(token))
        else:
            return None
    return dims


# '...' as two leading axes, each its own size: with every letter also its own size, an input of
# rank >= 3 in which no two axes can be confused (on [n, d], dim=1 and dim=-1 are the same axis)
DISTINCT_LEAD = (2, 3)


def axis_sizes(sizes: dict, shapes: list[str], distinct: bool = False) -> dict:
    """`sizes` with a size for every letter the shapes use, whatever the letter: one SIZES knows keeps
    its size, another gets the next size no letter has. `distinct`: every letter a size of its own, none
    equal to a leading axis of DISTINCT_LEAD."""
    letters = sorted({t for spec in shapes for t in re.findall(r"[A-Za-z]+", spec)})
    out = dict(sizes)
    taken = set(DISTINCT_LEAD) if distinct else set()
    for letter in sorted(letters, key=lambda t: (t not in sizes, t)):  # the known ones first
        size = sizes.get(letter, max([*out.values(), *taken, 1]) + 1)
        while distinct and size in taken:
            size += 1
        out[letter] = size
        taken.add(size)
    return out


def _mechanism_probe(qualname: str, interface: dict, routes: tuple[str, ...]) -> Probe | None:
    """A probe for a function mechanism, from its documented arguments (fidelity.mechanisms)."""
    arguments = interface["call"]["arguments"]
    required = [a for a in arguments if a["required"]]
    if any(a["type"] != "Tensor" or not a["shape"] for a in required):
        return None
    optional_tensors = [a for a in arguments if not a["required"] and a["shape"] and "Tensor" in a["type"]]
    has_backward = any(a["name"] == "backward" for a in arguments)

    shapes = [a["shape"] for a in arguments if a["shape"]]

    def variant(extra: dict | None = None, tensors: tuple = (), route: str | None = None, distinct: bool = False):
        def make(seed: int, sizes: dict):
            g = torch.Generator().manual_seed(seed)
            sizes, lead = axis_sizes(sizes, shapes, distinct), DISTINCT_LEAD if distinct else (2,)
            args = []
            for a in required:
                shape = _shape(a["shape"], sizes, lead)
                if shape is None:
                    raise NoProbe(f"shape {a['shape']!r} of {a['name']}")
                args.append(random_tensor(shape, g))
            kwargs = dict(extra or {})
            for a in tensors:
                shape = _shape(a["shape"], sizes, lead)
                if shape is None:
                    raise NoProbe(f"shape {a['shape']!r} of {a['name']}")
                kwargs[a["name"]] = random_tensor(shape, g)
            if route is not None:
                kwargs["backward"] = route
            return args, kwargs
        return make

    probe = Probe(qualname)
    probe.variants["defaults"] = variant()
    probe.variants[DISTINCT_AXES] = variant(distinct=True)
    for a in optional_tensors:
        probe.variants[f"with {a['name']}"] = variant(tensors=(a,))
    # inputs outside the contract, which a guard must refuse: a negative or zero count, a
    # negative scale, and the first tensor with its last axis one longer than its shape says
    for a in arguments:
        if not a["required"] and a["type"] in ("int", "float"):
            for bad in (-1, 0):
                probe.variants[f"{a['name']}={bad}"] = variant(extra={a["name"]: bad})
    probe.variants["last axis +1"] = _misshaped(variant())
    if has_backward:
        for route in routes:
            probe.variants[f"backward={route}"] = variant(tensors=tuple(optional_tensors), route=route)
    return probe


def _misshaped(make: Callable) -> Callable:
    def misshaped(seed: int, sizes: dict):
        args, kwargs = make(seed, sizes)
        if args:
            first = args[0]
            bigger = torch.cat([first.detach(), first.detach()[..., :1]], dim=-1)
            args = [bigger.requires_grad_(True), *args[1:]]
        return args, kwargs
    return misshaped


def _plain_probe(qualname: str, fn: Callable) -> Probe | None:
    """A module function with only positional tensor-like parameters: one float64 tensor each."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    required = [p for p in params if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not required or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None

    def of_shape(shape_of: Callable[[dict], list[int]]):
        def make(seed: int, sizes: dict):
            g = torch.Generator().manual_seed(seed)
            return [random_tensor(shape_of(sizes), g) for _ in required], {}
        return make

    # a matrix, a rank-3 tensor with three sizes, a vector, and a 0-d tensor (an input a guard may refuse)
    return Probe(qualname, {"defaults": of_shape(lambda s: [s["n"], s["d"]]),
                            DISTINCT_AXES: of_shape(lambda s: [*DISTINCT_LEAD, max(DISTINCT_LEAD) + s["d"]]),
                            "a vector": of_shape(lambda s: [s["n"]]), "a 0-d tensor": of_shape(lambda s: [])})


def probes_for(module_name: str, original: types.ModuleType) -> list[Probe]:
    """Every public entry of `module_name` we can call: its subjects' function mechanisms first, then
    its module classes (and module factories), then its other public functions."""
    from fidelity.discover.module_probes import module_probes
    from fidelity.mechanisms.docs import as_dict
    from fidelity.mechanisms.registry import project_mechanisms
    from fidelity import project
    from fidelity.subjects.registry import all_subjects

    known = project_mechanisms(project.current_or_none())
    probes: dict[str, Probe] = {}
    modules: dict[str, dict] = {}  # factory qualname -> its module mechanism's documentation
    for subject in all_subjects():
        for name, fn in subject.mechanisms.items():
            if getattr(fn, "__module__", None) != module_name or name not in known:
                continue
            if known[name].kind == "module":
                modules.setdefault(fn.__qualname__, as_dict(known[name]))
                continue
            entry = _bound_name(module_name, fn)
            probe = _mechanism_probe(entry, as_dict(known[name])["interface"], subject.capabilities[name].routes)
            if probe is not None:
                probes.setdefault(entry, probe)
    for probe in module_probes(module_name, original, modules):
        probes.setdefault(probe.entry, probe)
    for qualname, fn in vars(original).items():
        if (qualname.startswith("_") or qualname in probes or qualname in modules or not inspect.isfunction(fn)
                or fn.__module__ != module_name):
            continue
        probe = _plain_probe(qualname, fn)
        if probe is not None:
            probes[qualname] = probe
    return list(probes.values())


# ---------------------------------------------------------------- running

def _compare(expected, got) -> tuple[float, dict]:
    """(difference, what the witness adds: "error", the exceptions; "differs_at", the compared item)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        difference, which = _compare_named(expected, got)
        return difference, {"error": None, "differs_at": which}
    if isinstance(expected, str) or isinstance(got, str) or isinstance(expected, dict) or isinstance(got, dict):
        same = isinstance(expected, str) and isinstance(got, str) and expected.split(":")[0] == got.split(":")[0]
        if same:
            return 0.0, {"error": None}
        show = lambda b: b if isinstance(b, str) else "returns"  # noqa: E731
        return float("inf"), {"error": f"original {show(expected)}; mutant {show(got)}"}
    return _difference(expected, got), {"error": None}


def _compare_named(expected: dict, got: dict) -> tuple[float, str | None]:
    """Two behaviours as named items (tensors, exceptions, plain values): the worst item names itself."""
    if expected.keys() != got.keys():
        only = lambda a, b: ", ".join(sorted(set(a) - set(b))[:3]) or "nothing"  # noqa: E731
        return float("inf"), f"only the original has {only(expected, got)}; only the mutant has {only(got, expected)}"
    worst, which = 0.0, None
    for name, x in expected.items():
        y = got[name]
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            value = float("inf") if x.dtype != y.dtype else _difference([x], [y])
        elif isinstance(x, str) and isinstance(y, str):  # exceptions: the same refusal, or not
            value = 0.0 if x.split(":")[0] == y.split(":")[0] else float("inf")
        else:
            value = 0.0 if type(x) is type(y) and x == y else float("inf")
        if value > worst:
            worst, which = value, name
    if which is None:
        return worst, None
    x, y = expected[which], got[which]
    if isinstance(x, torch.Tensor) and x.shape == getattr(y, "shape", None):
        return worst, which
    return worst, f"{which}: original {_short(x)}; mutant {_short(y)}"


def _short(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{value.dtype} {tuple(value.shape)}".replace("torch.", "")
    return str(value[1] if isinstance(value, tuple) and len(value) == 2 else value)[:80]


def _difference(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
        return float("inf")
    worst = 0.0
    for x, y in zip(a, b):
        if x.numel() == 0:
            continue
        both_nan = torch.isnan(x) & torch.isnan(y)
        diff = ((x - y).abs() / x.abs().clamp_min(1.0)).masked_fill(both_nan, 0.0)
        value = float(diff.max())
        worst = max(worst, value if value == value else float("inf"))
    return worst


class _LineTrace:
    """Whether code of `path` executed any line in [first, last] while it was active (this thread),
    or called a function of `anchors` (code -> the (argument, default) pairs the lines lie in, each
    reached when the call leaves it at that default; none: any call reaches them)."""

    def __init__(self, path: str, first: int, last: int, anchors: dict | None = None):
        self.path, self.first, self.last, self.hit = path, first, last, False
        self.anchors = anchors or {}

    def _trace(self, frame, event, arg):
        if frame.f_code.co_filename != self.path:
            return None
        if event == "line" and self.first <= frame.f_lineno <= self.last:
            self.hit = True
        elif event == "call" and frame.f_code in self.anchors:
            pairs = self.anchors[frame.f_code]
            if not pairs or any(frame.f_locals.get(name, _MISSING) is default for name, default in pairs):
                self.hit = True
        return self._trace

    def __enter__(self):
        self._previous = sys.gettrace()
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._previous)


_MISSING = object()
_ORIGINALS: dict = {}


def _originals(module_name: str, path: str, source: str) -> dict:
    """What the original did on each input, kept across the mutants of one module (seeded, so the same
    every time): every mutant's decision runs only the mutant. One module's at a time."""
    key = (module_name, path, source)
    if key not in _ORIGINALS:
        _ORIGINALS.clear()
        _ORIGINALS[key] = {}
    return _ORIGINALS[key]


def _anchors(module: types.ModuleType, source: str, first: int, last: int) -> dict:
    """The functions whose call reaches lines [first, last] that run at import, not in the call: an
    argument's default in a module- or class-level signature, a class-level statement of a class."""
    import ast

    inside = lambda node: node.lineno <= last and first <= (node.end_lineno or node.lineno)  # noqa: E731
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    anchors: dict = {}

    def visit(body: list, owner: Any) -> None:
        for node in body:
            obj = getattr(owner, getattr(node, "name", ""), None) if owner is not None else None
            if isinstance(node, ast.ClassDef):
                visit(node.body, obj)
                methods = [getattr(m, "__func__", m) for m in vars(obj).values()] if isinstance(obj, type) else []
                statements = [s for s in node.body if not isinstance(s, (*functions, ast.ClassDef))]
                if any(inside(s) for s in statements):
                    anchors.update({m.__code__: () for m in methods if hasattr(m, "__code__")})
            elif isinstance(node, functions):
                fn = getattr(obj, "__func__", obj)
                a = node.args
                positional = a.posonlyargs + a.args
                pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
                pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
                hit = [arg.arg for arg, d in pairs if inside(d)]
                if hit and hasattr(fn, "__code__"):
                    params = inspect.signature(fn).parameters
                    anchors[fn.__code__] = tuple((name, params[name].default) for name in hit)

    try:
        visit(ast.parse(source).body, module)
    except (SyntaxError, ValueError, TypeError):
        pass
    return anchors


def decide(module_name: str, path: str, original_source: str, mutant_source: str,
           lines: tuple[int, int] | None = None) -> dict:
    """{"verdict": "equivalent" | "blind_spot" | "undecided", "inputs": [...], "max_difference", "witness"}.

    `lines` (first, last) are the mutated lines of the original (one span): a probe counts toward
    "equivalent" only if it executed the replacement's lines in the mutant."""
    original = load(module_name, path, original_source)
    try:
        mutant = load(module_name, path, mutant_source)
    except Exception as exc:  # the mutant fails at import: any use of the module tells them apart
        return {"verdict": "blind_spot", "inputs": ["import"], "max_difference": None,
                "witness": f"the mutated module fails to import: {type(exc).__name__}: {exc}"}
    if lines and reach_of(ast.parse(original_source), *lines) is None and same_program(original, mutant):
        # import-time lines (module or class level), which no probe's trace sees: e.g. two independent
        # module-level assignments swapped. Code a call runs is left to the probes, which name their inputs.
        return {"verdict": "equivalent", "inputs": [SAME_PROGRAM], "max_difference": 0.0, "witness": None}
    tried, reached, worst = [], [], 0.0
    first, last = lines or (1, 10**9)
    if lines:  # in the mutant's numbering: a guard removed for `pass` leaves one line, not the code after it
        last = max(first, last + mutant_source.count("\n") - original_source.count("\n"))
    known = _originals(module_name, path, original_source)
    anchors = _anchors(mutant, mutant_source, first, last)
    for probe in probes_for(module_name, original):
        for sizes, (label, make), seed in itertools.product(SIZES, probe.variants.items(), SEEDS):
            size_text = ",".join(f"{k}={v}" for k, v in sizes.items() if k in ("n", "L", "d"))
            where = f"{probe.entry}({label}; {size_text}; seed {seed})"
            try:
                inputs = make(seed, sizes)
            except Exception:  # NoProbe, or a shape this probe cannot build: no input, no verdict
                continue
            key = (probe.entry, label, tuple(sizes.items()), seed)
            expected = known[key] if key in known else known.setdefault(key, probe.run(original, inputs, seed))
            if isinstance(expected, str) and not expected.startswith(REFUSALS):
                continue  # the original breaks on this input (not a refusal it documents): no verdict from it
            tried.append(where)
            trace = _LineTrace(path, first, last, anchors)
            with trace:
                got = probe.run(mutant, inputs, seed)
            difference, detail = _compare(expected, got)
            if difference > BOUND:  # one input that tells them apart settles it (sizes run smallest first)
                return {"verdict": "blind_spot", "inputs": tried, "max_difference": _finite(difference),
                        "witness": {"input": where, "difference": difference, **detail}}
            if trace.hit:
                reached.append(where)
            worst = max(worst, difference)
    if not reached:
        why = ("no probe of this module runs on the original (no documented public function)" if not tried else
               f"none of the {len(tried)} probes executed the mutated line(s) {first}-{last}")
        return {"verdict": "undecided", "inputs": tried, "max_difference": None, "witness": why}
    return {"verdict": "equivalent", "inputs": reached, "max_difference": worst, "witness": None}


def _finite(x: float) -> float | None:
    return None if x == float("inf") else x
