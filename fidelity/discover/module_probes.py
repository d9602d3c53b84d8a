"""Probes for the module classes of a module: every public nn.Module subclass it defines, and every
module factory its subjects take from it (a mechanism of kind "module").

A probe builds the module on each side (the original's class, then the mutant's) with the same
global seed, in float64, and calls one method of it twice on the same seeded inputs. What is compared,
by name: the parameters, buffers and plain public attributes right after construction (a mutated
init value shows even where the forward hides it at init, e.g. behind a zero gate); each call's
outputs and the gradients of a random projection of them with respect to the inputs and to every
parameter, and what it returns besides tensors (a trace's names); and the state after both calls
(state kept between calls is behaviour). One variant moves every parameter off its init first:
zero-init queries and gates hide most of a forward at init.

Constructor arguments come from the mechanism's documented factory where there is one, else from
the class's `__init__`: sizes by name (or by the symbol a documented argument starts with, "N, the
number of blocks"), a seeded generator, layer bodies for callables, a dataclass config built with
its defaults. Variants: every optional argument at its default ("defaults", where a mutated default
shows), then each optional number, flag, string choice and config field given another value in
turn, counts of 1, 0 and -1 at a guard's boundary, a string no choice names, the constructor's
own dtype. Method inputs come from the documented shapes of the module's Protocol (each shape its
documentation writes, with and without the leading axes), else a [n, d] tensor per tensor argument.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import itertools
import math
import re
import sys
import types
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

from fidelity.discover.probe import REFUSALS, SIZES, NoProbe, Probe, random_tensor, resolve

_QUOTED = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)'")       # 'paper' or 'sliced'
_NAMED = re.compile(r"\b([A-Z][A-Z0-9_]{2,})\b")          # one of SCORE_CONVENTIONS
_MODULE = re.compile(r"\(([a-z_][\w]*(?:\.[a-z_]\w*)+)\)")  # (fidelity.mechanisms.depth_attention)
_INTEGER_INPUT = re.compile(r"\bint(64|32)?\b|\btoken", re.I)
_NN_MODULE_NAMES = set(dir(nn.Module))


# ---------------------------------------------------------------- what a probe passes

@dataclass(frozen=True)
class _Generator:
    """A torch.Generator seeded with `seed`, made anew for each side (drawing from it consumes it)."""
    seed: int


@dataclass(frozen=True)
class _Config:
    """A dataclass of the module built on each side from that side's class (its defaults may be mutated)."""
    qualname: str
    fields: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class _Count:
    """A count a variant gives: another count's size (`size`), or the number of layer bodies (`bodies`)."""
    size: str | None = None
    bodies: int | None = None

    def value(self, sizes: dict) -> Any:
        if self.bodies is not None:  # a negative count: that many times L
            return [functools.partial(_sublayer, k=k) for k in range(self.bodies if self.bodies >= 0
                                                                      else -self.bodies * sizes["L"])]
        return sizes[self.size]


@dataclass
class ModuleCall:
    """One input of a module probe: how to build the module, and which method to call with what."""
    factory: str                     # qualified name in the module
    args: list
    kwargs: dict
    method: str                      # "forward" calls the module itself (its hooks run)
    call_args: list
    call_kwargs: dict
    float64_default: bool            # no dtype argument: build and run under torch's default dtype float64
    moved: bool = False              # move every parameter off its init (after comparing it) before the calls


@dataclass
class _Arg:
    name: str
    kind: str           # int float bool str generator dtype device body bodies config tensor unknown
    required: bool
    default: Any
    doc: str = ""
    keyword: bool = False
    shapes: tuple[str, ...] = ()     # a tensor's documented shapes, first the one used by default
    config: type | None = None       # the dataclass, for kind "config"
    choices: tuple[str, ...] = ()    # a string's other values
    size: str | None = None          # the SIZES key of a count


@dataclass(frozen=True)
class _Variant:
    """What one variant changes from the defaults (every optional argument left out)."""
    ctor: tuple = ()                 # (argument, value) given to the constructor
    config: tuple = ()               # (field, value) of the config dataclass
    call: tuple = ()                 # (argument, value) given to the method
    shapes: int = 0                  # which of the documented shapes the tensors take
    lead: int = 1                    # leading axes where a shape says '..'
    dtype_default: bool = False      # the constructor's own dtype (float32)
    float32_inputs: bool = True      # ... and float32 inputs with it
    generator: bool = False          # an optional generator given
    misshaped: bool = False          # the first tensor one longer on its last axis
    moved: bool = False              # the parameters moved off their init before the calls


def _body(u: torch.Tensor) -> torch.Tensor:
    """A fixed layer body: nonlinear, and mixing the last axis, so a wrong axis or route shows."""
    return torch.tanh(u) + 0.5 * u.roll(1, dims=-1)


def _sublayer(u: torch.Tensor, k: int) -> torch.Tensor:
    return torch.tanh(u * (0.5 + 0.25 * k)) + 0.3 * u.roll(1, dims=-1)


# ---------------------------------------------------------------- reading the arguments

def _kind(name: str, type_text: str, annotation: Any, namespace: dict) -> tuple[str, type | None]:
    text = type_text or ""
    if name == "dtype" or "dtype" in text:
        return "dtype", None
    if name == "device" or "device" in text:
        return "device", None
    if "Generator" in text:
        return "generator", None
    if re.search(r"(Sequence|list|tuple)\[Callable", text):
        return "bodies", None
    if "Callable" in text:
        return "body", None
    if "Tensor" in text:
        return "tensor", None
    base = text.replace(" | None", "").replace("None | ", "").strip()
    if base in ("int", "float", "bool", "str"):
        return base, None
    if isinstance(annotation, str):
        try:
            annotation = eval(annotation, dict(namespace))  # noqa: S307 - an annotation of our own source
        except Exception:
            annotation = None
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return "config", annotation
    return "unknown", None


def _unannotated(name: str, default: Any, method: bool) -> str:
    """An argument without a type: the type of its default; else a size by its name, or a tensor (a method's)."""
    if default is not inspect.Parameter.empty and default is not None:
        kind = type(default).__name__
        return kind if kind in ("int", "float", "bool", "str") else "unknown"
    if name in SIZES[0]:
        return "int"
    return "tensor" if method and default is inspect.Parameter.empty else "unknown"


def _namespaces(module: types.ModuleType, mechanism: dict | None, docs: list[str]) -> list[dict]:
    """Where a string argument's other values may be listed: the module, its mechanism's module, and
    any module a documentation names in parentheses."""
    names = [mechanism["declared_in"]] if mechanism else []
    names += [m for doc in docs for m in _MODULE.findall(doc)]
    spaces = [vars(module)]
    for name in dict.fromkeys(names):
        try:
            spaces.append(vars(importlib.import_module(name)))
        except Exception:
            pass
    return spaces


def _choices(name: str, default: Any, doc: str, spaces: list[dict]) -> tuple[str, ...]:
    """The other values of a string argument: quoted in its documentation, in a tuple the documentation
    names (one of MODES), else in a module's tuples of strings that hold its default (those whose name
    shares a word with the argument's, where there are such: LAYOUTS for mhc_layout)."""
    found = list(_QUOTED.findall(doc))
    for word in _NAMED.findall(doc):
        found += [v for space in spaces if _strings(space.get(word)) for v in space[word]]
    if not found and isinstance(default, str):
        holding = {key: value for space in spaces for key, value in list(space.items())
                   if _strings(value) and default in value}
        words = lambda text: {w.rstrip("s") for w in text.lower().split("_") if w}  # noqa: E731
        alike = [key for key in holding if words(key) & words(name)]
        found += [v for key in (alike or holding) for v in holding[key]]
    return tuple(v for v in dict.fromkeys(found) if v != default)


def _strings(value: Any) -> bool:
    return isinstance(value, tuple) and bool(value) and all(isinstance(v, str) for v in value)


def _arguments(fn: Callable, documented: list[dict] | None, namespace: dict, spaces: list[dict]) -> list[_Arg]:
    """The arguments of `fn` (a class or a method): the documented ones where documented, with the
    signature's defaults. NoProbe for a required one we cannot make."""
    params = {name: p for name, p in inspect.signature(fn).parameters.items()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name != "self"}
    docs = {a["name"]: a for a in documented or ()}
    args = []
    for name in (list(docs) if docs else list(params)):
        p = params.get(name)
        if p is None:
            if docs[name]["required"]:
                raise NoProbe(f"the documented argument {name!r} is not in the signature")
            continue
        doc = docs.get(name, {})
        annotation = None if p.annotation is inspect.Parameter.empty else p.annotation
        text = doc.get("type") or (annotation if isinstance(annotation, str) else getattr(annotation, "__name__", ""))
        kind, config = _kind(name, text or "", annotation, namespace)
        if kind == "unknown" and isinstance(annotation, str):  # documented as a Protocol: the signature names the class
            kind, config = _kind(name, annotation, annotation, namespace)
        if kind == "unknown" and annotation is None and not doc:
            kind = _unannotated(name, p.default, method=not inspect.isclass(fn))
        required = p.default is inspect.Parameter.empty
        arg = _Arg(name, kind, required, None if required else p.default, doc.get("doc", ""),
                   p.kind is p.KEYWORD_ONLY, config=config)
        if kind == "tensor":  # the documented shape, else the shapes its documentation writes ("[.., C] or [.., nC]")
            specs = [doc["shape"]] if doc.get("shape") else re.findall(r"\[[^\[\]]*\]", arg.doc)
            arg.shapes = tuple(s for s in specs if _shape_of(s, SIZES[1]) is not None)
        if kind == "str":
            arg.choices = _choices(name, arg.default, arg.doc, spaces)
        if kind == "int":
            symbol = re.match(r"\s*([A-Za-z]+)\b", arg.doc)  # "N, the number of blocks"
            arg.size = next((k for k in (name, symbol and symbol.group(1)) if k in SIZES[0]), None)
        if required and (kind == "unknown" or (kind == "str" and not arg.choices)):
            raise NoProbe(f"required argument {name!r} of type {text or '?'}")
        args.append(arg)
    return args


def _config_fields(config: type, spaces: list[dict]) -> list[_Arg]:
    """A dataclass's fields as optional arguments (their defaults are what "defaults" builds)."""
    home = sys.modules.get(config.__module__)
    spaces = [vars(home)] if home is not None else spaces
    out = []
    for f in dataclasses.fields(config):
        if f.default is dataclasses.MISSING:
            continue
        kind, _ = _kind(f.name, f.type if isinstance(f.type, str) else getattr(f.type, "__name__", ""), None, {})
        arg = _Arg(f.name, kind, False, f.default)
        if kind == "str":
            arg.choices = _choices(f.name, f.default, "", spaces)
        out.append(arg)
    return out


# ---------------------------------------------------------------- values

def _others(arg: _Arg) -> list[tuple[str, Any]]:
    """(label, value) for each other value an argument is given in a variant of its own: the other
    flag, the other strings and one no choice names (a guard refuses it), another number, and the
    counts 1, 0, -1 at and beyond the boundary a guard holds."""
    d = arg.default
    if arg.kind == "bodies":  # twice as many layers (blocks of several), one, and none (a guard refuses it)
        return [(f"{arg.name}: 2L bodies", _Count(bodies=-2)), *((f"{arg.name}: {k} bodies", _Count(bodies=k))
                                                                  for k in (1, 0))]
    if arg.kind == "bool":
        return [(f"{arg.name}={v}", v) for v in (True, False) if v is not d]
    if arg.kind == "generator" and arg.required:  # a guard insists on one
        return [(f"{arg.name}=None", None)]
    if arg.kind == "str":
        return [(f"{arg.name}={v!r}", v) for v in (*arg.choices, "unknown")] if arg.choices else []
    if arg.kind == "int":
        values = [1, 0, -1] if arg.required else [(2 * d if d else 1) if isinstance(d, int) else 2, 1, 0, -1]
    elif arg.kind == "float":
        values = [0.5 if d != 0.5 else 0.25, 0.0, -1.0]
    else:
        return []
    return [(f"{arg.name}={v}", v) for v in dict.fromkeys(values) if v != d or type(v) is not type(d)]


def _required(arg: _Arg, sizes: dict, seed: int) -> Any:
    if arg.kind == "int":  # a count: by its name in SIZES, or the symbol its documentation starts with, else n
        return sizes[arg.size or "n"]
    return {"float": lambda: 0.5, "bool": lambda: False, "str": lambda: arg.choices[0],
            "generator": lambda: _Generator(seed), "dtype": lambda: torch.float64, "device": lambda: None,
            "body": lambda: _body, "bodies": lambda: [functools.partial(_sublayer, k=k) for k in range(sizes["L"])],
            "config": lambda: _Config(arg.config.__qualname__)}[arg.kind]()


def _shape_of(spec: str, sizes: dict, lead: int = 1) -> list[int] | None:
    """'[.., n, C]' -> [n, n, C]: `lead` leading axes of n where it says '..'; 'nC' and 'n*C' are products."""
    inner = spec.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        return None
    dims = []
    for token in (t.strip() for t in inner[1:-1].split(",") if t.strip()):
        factors = token.split("*") if "*" in token else ([token] if token in sizes else list(token))
        if token in ("..", "..."):
            dims += [sizes["n"]] * lead
        elif token.isdigit():
            dims.append(int(token))
        elif factors and all(f.strip() in sizes for f in factors):
            dims.append(math.prod(sizes[f.strip()] for f in factors))
        else:
            return None
    return dims


def _input(a: _Arg, sizes: dict, g: torch.Generator, v: _Variant) -> Any:
    if a.kind != "tensor":
        return _required(a, sizes, 0)
    spec = a.shapes[min(v.shapes, len(a.shapes) - 1)] if a.shapes else None
    shape = _shape_of(spec, sizes, v.lead) if spec else [sizes["n"]] * v.lead + [sizes["d"]]
    if shape is None:
        raise NoProbe(f"shape {spec!r} of {a.name}")
    if _INTEGER_INPUT.search(a.doc) or a.name in ("tokens", "ids", "indices"):
        return torch.randint(0, 4, tuple(shape), generator=g)
    t = random_tensor(shape, g)
    return t.detach().float().requires_grad_(True) if v.dtype_default and v.float32_inputs else t


# ---------------------------------------------------------------- building the probes

def module_probes(module_name: str, original: types.ModuleType, mechanisms: dict[str, dict]) -> list[Probe]:
    """One probe per (module class or factory, public method with tensor arguments): forward first.

    `mechanisms`: qualname -> the documentation (fidelity.mechanisms.docs.as_dict) of the module
    mechanism whose factory it is."""
    factories = dict.fromkeys(mechanisms)
    for qualname, obj in vars(original).items():
        if (not qualname.startswith("_") and inspect.isclass(obj) and issubclass(obj, nn.Module)
                and obj.__module__ == module_name):
            factories.setdefault(qualname)
    probes = []
    for qualname in factories:
        try:
            probes += _probes_of(original, qualname, mechanisms.get(qualname))
        except (NoProbe, TypeError, ValueError, AttributeError):
            continue  # no constructor we can call: no probe, as for a function we cannot call
    return probes


def _probes_of(original: types.ModuleType, qualname: str, mechanism: dict | None) -> list[Probe]:
    factory = resolve(original, qualname)
    documented = mechanism["interface"]["call"]["arguments"] if mechanism else None
    spaces = _namespaces(original, mechanism, [a["doc"] for a in documented or ()])
    ctor = _arguments(factory, documented, vars(original), spaces)
    config = next((a.config for a in ctor if a.kind == "config"), None)
    fields = _config_fields(config, spaces) if config else []
    cls = factory if inspect.isclass(factory) else None
    methods = {m["name"]: m["arguments"] for m in (mechanism["module"]["methods"] if mechanism else ())}
    names = ["forward"] + [n for n, member in (vars(cls).items() if cls else methods.items())
                           if not n.startswith("_") and n not in _NN_MODULE_NAMES and n != "forward"
                           and (n in methods or inspect.isfunction(member))]
    probes = []
    for name in names:
        target = getattr(cls, name, None) if cls else None
        try:
            if target is not None:
                call = _arguments(target, methods.get(name), vars(original), spaces)
            elif name in methods:  # a factory function: the module's methods as documented
                call = _arguments_documented(methods[name])
            else:
                continue
        except (NoProbe, TypeError, ValueError):
            continue
        if not any(a.kind == "tensor" for a in call):
            continue  # nothing to feed it: a setter, a property-like method
        entry = qualname if name == "forward" else f"{qualname}.{name}"
        plan = _Plan(qualname, ctor, fields, name, call)
        probes.append(Probe(entry, {label: plan.maker(v) for label, v in plan.variants().items()},
                            behaviour=_behaviour))
    return probes


def _arguments_documented(arguments: list[dict]) -> list[_Arg]:
    return [_Arg(a["name"], _kind(a["name"], a["type"], None, {})[0], a["required"], None, a["doc"],
                 a["kind"] == "keyword", (a["shape"],) if a["shape"] else ()) for a in arguments]


@dataclass
class _Plan:
    """How to build one module and call one of its methods, and the variants of that."""
    factory: str
    ctor: list[_Arg]
    fields: list[_Arg]               # of the config dataclass the constructor takes, if any
    method: str
    call: list[_Arg]

    def variants(self) -> dict[str, _Variant]:
        """"defaults" first; then one argument, one config field, one method argument or one input
        shape changed at a time; the structural choices (flags, strings) also with each other shape."""
        out = {"defaults": _Variant()}
        if any(a.kind == "dtype" for a in self.ctor):  # inputs in that dtype, and in float64 (a guard may refuse)
            out["dtype at its default"] = _Variant(dtype_default=True)
            out["dtype at its default, float64 inputs"] = _Variant(dtype_default=True, float32_inputs=False)
        optional_generator = any(a.kind == "generator" and not a.required for a in self.ctor)
        structural = []  # (argument, label, variant) of a flag or a string choice: the code paths
        counts = [a.size for a in self.ctor if a.size] + (["L"] if any(a.kind == "bodies" for a in self.ctor) else [])
        for a in self.ctor:
            others = _others(a) + [(f"{a.name}={key}", _Count(size=key)) for key in counts
                                   if a.required and a.size and key != a.size]  # a guard compares two counts
            for i, (label, value) in enumerate(others):
                out[label] = _Variant(ctor=((a.name, value),))
                if (a.kind in ("bool", "str") and value != "unknown") or (a.kind == "bodies" and i == 0):
                    structural.append((a.name, label, out[label]))
                if optional_generator and i == 0 and a.kind in ("int", "float") and not a.required:
                    out[f"{label}, generator"] = _Variant(ctor=((a.name, value),), generator=True)
        for a in self.fields:
            for label, value in _others(a):
                out[f"config.{label}"] = _Variant(config=((a.name, value),))
                if a.kind in ("bool", "str") and value != "unknown":
                    structural.append((f"config.{a.name}", f"config.{label}", out[f"config.{label}"]))
        tensors = [a for a in self.call if a.kind == "tensor" and a.required]
        for a in self.call:
            if a.required:
                continue
            if a.kind == "int":  # an optional count, None by default: a size
                out[f"{self.method}: {a.name}=2"] = _Variant(call=((a.name, 2),))
            for label, value in _others(a) if a.kind in ("bool", "str") else ():
                label = f"{self.method}: {label}"
                out[label] = _Variant(call=((a.name, value),))
                if value != "unknown":
                    structural.append((f"{self.method}.{a.name}", label, out[label]))
        # two choices at once: a branch inside a branch (two_phase with a learned gain, the mhc arm's paper
        # layout), at init and off it
        for (a1, label1, v1), (a2, label2, v2) in itertools.combinations(structural, 2):
            if a1 != a2:
                both = _Variant(ctor=v1.ctor + v2.ctor, config=v1.config + v2.config, call=v1.call + v2.call)
                out[f"{label1} & {label2}"] = both
                out[f"{label1} & {label2}; parameters moved off init"] = dataclasses.replace(both, moved=True)
        documented = max((len(a.shapes) for a in tensors), default=0)
        for k in range(1, documented):
            shown = ", ".join(f"{a.name} {a.shapes[min(k, len(a.shapes) - 1)]}" for a in tensors if a.shapes)
            out[f"{self.method}: {shown}"] = _Variant(shapes=k)
            for _, label, v in structural:
                out[f"{label}; {self.method}: {shown}"] = dataclasses.replace(v, shapes=k)
        if any(".." in s for a in tensors for s in a.shapes) or any(not a.shapes for a in tensors):
            for lead, shown in ((0, "no leading axes"), (2, "two leading axes")):  # an axis counted from the front
                out[f"{self.method}: {shown}"] = _Variant(lead=lead)
                for _, label, v in structural:
                    out[f"{label}; {self.method}: {shown}"] = dataclasses.replace(v, lead=lead)
        if tensors:
            out[f"{self.method}: last axis +1"] = _Variant(misshaped=True)
        # zero-init queries and gates hide most of a forward at init: the same code at another point
        out["parameters moved off init"] = _Variant(moved=True)
        for _, label, v in structural:
            out[f"{label}; parameters moved off init"] = dataclasses.replace(v, moved=True)
        return out

    def maker(self, v: _Variant) -> Callable[[int, dict], ModuleCall]:
        def make(seed: int, sizes: dict) -> ModuleCall:
            sizes = self._sizes(sizes, v)
            given = {name: value.value(sizes) if isinstance(value, _Count) else value for name, value in v.ctor}
            sizes = {**sizes, **self._given_sizes(given)}  # n=1 builds one stream: the input has one
            args, kwargs = [], {}
            for a in self.ctor:
                if a.name in given:
                    value = given[a.name]
                elif a.kind == "config":
                    value = _Config(a.config.__qualname__, v.config)
                elif a.required:
                    value = _required(a, sizes, seed)
                elif a.kind == "dtype" and not v.dtype_default:
                    value = torch.float64
                elif a.kind == "generator" and v.generator:
                    value = _Generator(seed)
                else:
                    continue  # left at its default
                if a.required and not a.keyword:
                    args.append(value)
                else:
                    kwargs[a.name] = value
            g = torch.Generator().manual_seed(seed)
            call_args, call_kwargs, chosen = [], {}, dict(v.call)
            for a in self.call:
                if a.name in chosen:
                    call_kwargs[a.name] = chosen[a.name]
                elif a.required:
                    value = _input(a, sizes, g, v)
                    (call_kwargs.__setitem__(a.name, value) if a.keyword else call_args.append(value))
            if v.misshaped:
                floating = [i for i, x in enumerate(call_args) if isinstance(x, torch.Tensor) and x.is_floating_point()]
                if not floating:
                    raise NoProbe("no floating input to misshape")
                i = floating[0]
                t = call_args[i].detach()
                call_args[i] = torch.cat([t, t[..., :1]], dim=-1).requires_grad_(True)
            has_dtype = any(a.kind == "dtype" for a in self.ctor)
            return ModuleCall(self.factory, args, kwargs, self.method, call_args, call_kwargs, not has_dtype, v.moved)
        return make

    def _sizes(self, sizes: dict, v: _Variant) -> dict:
        """SIZES, with a config's own sizes where it has them (a LoopConfig's d is 8, not SIZES' d)."""
        config = dict(v.config)
        own = {a.name: config.get(a.name, a.default) for a in self.fields if a.kind == "int"}
        return {**sizes, **{k: x for k, x in own.items() if isinstance(x, int) and x > 0}}

    def _given_sizes(self, given: dict) -> dict:
        """The sizes of the counts a variant gives, where positive (the input follows them)."""
        own = {}
        for a in self.ctor:
            if a.name in given and a.size and isinstance(given[a.name], int) and given[a.name] > 0:
                own[a.size] = given[a.name]
            elif a.name in given and a.kind == "bodies" and given[a.name]:
                own["L"] = len(given[a.name])
        return own


# ---------------------------------------------------------------- running one side

class _Raised(str):
    """An exception a call raised, kept as its name and message: compared by the exception's name."""


def _behaviour(module: types.ModuleType, call: ModuleCall, seed: int) -> dict | str:
    """Build the module of `module` (one side), call the method twice: every compared tensor by name.
    A string when it cannot be built, or when a call fails other than by refusing its input."""
    previous = torch.get_default_dtype()
    with torch.random.fork_rng(devices=[]):
        try:
            if call.float64_default:
                torch.set_default_dtype(torch.float64)
            # init may draw from the global generator: the same draws on both sides. The CPU's, which fork_rng
            # restores: torch.manual_seed also queues a seed for each device not yet started, with the stack
            # that asked (~1 ms a call: a fifth of deciding a module's mutant)
            torch.default_generator.manual_seed(seed)
            obj = resolve(module, call.factory)(*_materialise(call.args, module), **_materialise(call.kwargs, module))
            if not isinstance(obj, nn.Module):
                return f"TypeError: {call.factory} returned a {type(obj).__name__}, not an nn.Module"
            seen = _state(obj, "init")
            if call.moved:
                _move(obj, seed)
            fn = obj if call.method == "forward" else getattr(obj, call.method)
            for k in (1, 2):
                args = [_copy(a) for a in call.call_args]
                kwargs = {name: _copy(v) for name, v in call.call_kwargs.items()}
                try:  # the backward too: a mutant may break its hand-written backward
                    out = fn(*args, **kwargs)
                    seen.update(_outputs_and_grads(out, [*args, *kwargs.values()], obj, 10_000 * k + seed,
                                                   f"call {k}"))
                except Exception as exc:
                    if not type(exc).__name__.startswith(REFUSALS):
                        return f"{type(exc).__name__}: {exc}"
                    seen[f"call {k}"] = _Raised(f"{type(exc).__name__}: {exc}")
                    break
            seen.update(_state(obj, "after the calls"))
            return seen
        except Exception as exc:  # it cannot be built (a refusal, or broken), or breaks anywhere else
            return f"{type(exc).__name__}: {exc}"
        finally:
            torch.set_default_dtype(previous)


def _move(obj: nn.Module, seed: int) -> None:
    """Add seeded noise to every parameter, drawn by its name (so the order they are registered in is no behaviour)."""
    with torch.no_grad():
        for name, p in obj.named_parameters():
            if p.is_floating_point():
                g = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
                p.add_(0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64).to(p.dtype))


def _materialise(value: Any, module: types.ModuleType) -> Any:
    if isinstance(value, _Generator):
        return torch.Generator().manual_seed(value.seed)
    if isinstance(value, _Config):
        return resolve(module, value.qualname)(**dict(value.fields))
    if isinstance(value, list):
        return [_materialise(v, module) for v in value]
    if isinstance(value, dict):
        return {k: _materialise(v, module) for k, v in value.items()}
    return value


def _copy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    return value


def _state(obj: nn.Module, when: str) -> dict:
    """Parameters, buffers and plain public attributes (of the module and its children), by name."""
    seen: dict[str, Any] = {f"{when}: parameter {n}": p.detach().clone() for n, p in obj.named_parameters()}
    seen.update({f"{when}: buffer {n}": b.detach().clone() for n, b in obj.named_buffers()})
    for prefix, sub in obj.named_modules():
        for name, value in vars(sub).items():
            plain = _plain(value)
            if not name.startswith("_") and plain is not None:
                seen[f"{when}: attribute {prefix + '.' if prefix else ''}{name}"] = plain
    return seen


def _plain(value: Any) -> Any:
    """A value compared by equality (numbers, strings, their tuples, a dataclass's fields), else None."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return ("value", value)
    if isinstance(value, (tuple, list)):
        items = [_plain(v) for v in value]
        return None if any(i is None for i in items) else ("sequence", tuple(items))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain([(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)])
    if isinstance(value, torch.dtype):
        return ("dtype", str(value))
    return None


def _skeleton(value: Any) -> Any:
    """The output with each tensor replaced by its shape: the plain values in it compared by equality."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_skeleton(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _skeleton(v)) for k, v in value.items()))
    plain = _plain(value)
    return plain if plain is not None else ("object", type(value).__name__)


def _outputs_and_grads(out: Any, inputs: list, obj: nn.Module, seed: int, label: str) -> dict:
    from fidelity.gates.tensors import floating_tensors

    outs = list(floating_tensors(out))
    seen: dict[str, Any] = {f"{label}: output {i}": t.detach().clone() for i, t in enumerate(outs)}
    seen[f"{label}: what it returns besides its tensors"] = _skeleton(out)  # a trace's names, counts
    tensors = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
    params = [(n, p) for n, p in obj.named_parameters() if p.requires_grad]
    differentiable = [t for t in outs if t.requires_grad]
    if differentiable and (tensors or params):
        g = torch.Generator().manual_seed(seed)
        loss = sum((t * torch.randn(t.shape, generator=g, dtype=t.dtype)).sum() for t in differentiable)
        leaves = tensors + [p for _, p in params]
        grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        names = [f"input {i}" for i in range(len(tensors))] + [f"parameter {n}" for n, _ in params]
        for name, leaf, grad in zip(names, leaves, grads):
            seen[f"{label}: gradient of {name}"] = torch.zeros_like(leaf) if grad is None else grad.detach()
    return seen
