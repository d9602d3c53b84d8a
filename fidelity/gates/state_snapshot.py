"""A snapshot of the state a call can touch, flat ({path: fingerprint}), so two compare entry by entry.

Roots (fidelity.gates.statelessness takes one before the first call, one after it, one after more calls):
- each torch.nn.Module given, as `NAME`: every submodule, parameters and buffers by bits (dtype, shape,
  device, requires_grad, bytes), and every other attribute in its __dict__ (a `_calls` counter a
  forward adds, a `t_max` it decrements, the `training` flag);
- each other object given, as `NAME` (a function subject's callable, a package's object): see below;
- each implementation module named, and its submodules (only those already imported: nothing of one
  not imported ran), as `pkg.mod:NAME`: its globals (a `_CALLS` list that grows);
- the global RNGs: torch (CPU, and CUDA once initialised), numpy and Python's `random`.

What is walked from a root: everything reachable, whoever defined it, except infrastructure.
- The subject's state, walked: an object's attributes (its __dict__ and __slots__) and the class
  attributes of each class in its MRO (`NAME.<class Sinkhorn>.total`: a counter kept on the class); a
  function's __dict__, defaults and closure cells, and, for the callable a root object is (and what it
  hands the call to: a partial's func, a wrapper's __wrapped__, a bound method's function) where the
  implementation modules do not define it (an adapter's function), the globals its code names
  (`NAME.<global _PROJECTION>`: the package object an adapter keeps at module level). The globals of
  functions met further in (a library's methods) are not read: a library's module-level registries
  (einops' backends) are its own, and an implementation module's globals are read as a root; a bound method's __self__ and __func__; a functools.partial's func,
  args and keywords; a wrapper's __wrapped__ (the harness's output check is seen through). A package's
  Sinkhorn object with an iteration counter is read whatever module defines its class.
- Infrastructure, fingerprinted by type alone: objects, functions and classes defined in the standard
  library (functools' lru_cache wrappers, locks, module objects; a types.SimpleNamespace, a bare
  holder of attributes, is walked all the same), torch (its internals; a
  torch.nn.Module is walked as above, a torch.Generator read by its state), triton (a JITFunction's
  compile cache, which fills on first use), numpy (an array is read by its bits, a Generator or
  RandomState by its state) and the harness itself (fidelity, but fidelity.impl, which is a subject;
  pytest, pluggy and hypothesis, which run the gates). A module's dunder globals (its name, loader,
  spec) and its globals bound to infrastructure (imports: a module, a typing alias, a torch function;
  Triton's interpreter binds its own names into a kernel's module at the first launch) are not read.
  Their caches fill on a first call keyed on shapes and dtypes; they are not the subject's state, and
  reading them would call a legitimate cache a defect. What a subject keeps that is neither (a cache
  of its own, filled on the first call) is state; a subject that keeps it on purpose declares it
  (Capability.keeps_state), and the gate says what it was told.

Values by kind: tensors and numpy arrays by bits; numbers, str, bytes, bool, None (and torch's dtype,
device, Size) by repr; list, tuple, dict, set, deque item by item (DEPTH levels deep, a cycle cut where
it closes); an object reached twice is walked once, where first met (the other path names it).

Paths read like the code: `module.mhc.t_max`, `fidelity.impl.torch.sinkhorn:sinkhorn.calls`,
`fidelity.impl.torch.depth_attention:_CALLS[2]`, `sinkhorn.__wrapped__.<global _PROJ>.iterations`,
`rng:torch`.
"""
from __future__ import annotations

import collections
import functools
import hashlib
import random
import sys
import types
from typing import Iterable, Mapping

import torch

DEPTH = 8
"""Containers and objects this many levels below a root are fingerprinted by type and length only."""
ITEMS = 256
"""Items of one container taken one entry each; the rest together as one entry."""
SHOWN = 72
"""Characters of a value that a message shows."""
INFRASTRUCTURE = frozenset(sys.stdlib_module_names) | {"torch", "triton", "numpy", "fidelity", "pytest", "_pytest",
                                                        "pluggy", "hypothesis"}
"""Top-level packages whose objects, functions and classes are fingerprinted by type alone (see the docstring)."""
SUBJECT_PACKAGES = ("fidelity.impl",)
"""Packages under an infrastructure name that are subjects all the same (this repository's implementations)."""

Fingerprint = tuple
ABSENT = ("absent",)
_ATOMS = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size)
_CONTAINERS = (list, tuple, dict, set, frozenset, collections.deque)
_MORE = "\u2026"


def snapshot(*, modules: Mapping[str, torch.nn.Module] | Iterable[torch.nn.Module] = (),
             implementation: Iterable[str] = (), objects: Mapping[str, object] = ()) -> dict[str, Fingerprint]:
    """{path: fingerprint} of `modules` (named, or named by their class), `objects` (named), the modules
    named in `implementation` and their submodules (those already imported), and the global RNG states."""
    names = implementation_modules(implementation)
    walker = _Walker(names)
    for name, module in _named(modules):
        walker.value(module, name, 0, ())
    for name, value in dict(objects).items():
        walker.callables |= _called(value)
        walker.value(value, name, 0, ())
    for name in names:
        for key, value in list(vars(sys.modules[name]).items()):
            if key.startswith("__") and key.endswith("__") or _imported_name(value):
                continue
            home = getattr(value, "__module__", None)
            walker.value(value, f"{name}:{key}", 1, ())
    walker.rngs()
    return walker.entries


def _imported_name(value) -> bool:
    """Whether a module global is bound to infrastructure (a module, a typing alias, torch's or triton's
    functions): an import, not state, whenever it was bound (Triton's interpreter binds its own names
    into a kernel's module at the first launch)."""
    if isinstance(value, types.ModuleType):
        return True
    if _leaf(value) is not None or isinstance(value, (_CONTAINERS, torch.nn.Module, functools.partial)):
        return False
    if isinstance(value, (types.FunctionType, type)):
        return infrastructure(value.__module__)
    return infrastructure(type(value).__module__) and "__wrapped__" not in getattr(value, "__dict__", {})


def implementation_modules(implementation: Iterable[str]) -> list[str]:
    """The modules named, and the submodules of each already imported (a package's `pkg.core`), in order."""
    names = []
    for name in dict.fromkeys(implementation):
        names += [m for m in sorted(sys.modules) if (m == name or m.startswith(name + ".")) and m not in names
                  and isinstance(sys.modules[m], types.ModuleType)]
    return names


def infrastructure(module_name: str | None) -> bool:
    """Whether what a module defines is infrastructure (see the docstring): by its top-level package."""
    name = module_name or "builtins"
    if any(name == p or name.startswith(p + ".") for p in SUBJECT_PACKAGES):
        return False
    return name.split(".")[0] in INFRASTRUCTURE


def changes(before: Mapping[str, Fingerprint], after: Mapping[str, Fingerprint]) -> list[tuple[str, str, str]]:
    """(path, before, after) shortened for a message, for every entry that changed, appeared or disappeared."""
    paths = list(before) + [p for p in after if p not in before]
    return [(p, describe(before.get(p, ABSENT)), describe(after.get(p, ABSENT)))
            for p in paths if before.get(p, ABSENT) != after.get(p, ABSENT)]


def describe(fp: Fingerprint) -> str:
    """A fingerprint as a message shows it, at most SHOWN characters."""
    kind = fp[0]
    if kind == "tensor":
        _, dtype, shape, device, grad, data, preview = fp
        text = f"{dtype}{list(shape)} {device}{' requires_grad' if grad else ''} {preview} #{_digest(data)}"
    elif kind == "ndarray":
        _, dtype, shape, data, preview = fp
        text = f"numpy {dtype}{list(shape)} {preview} #{_digest(data)}"
    elif kind == "value":
        text = f"{fp[1]} {fp[2]}"
    elif kind == "container":
        text = f"{fp[1]} of {fp[2]}"
    elif kind in ("rng", "generator"):
        text = f"{' '.join(map(str, fp[1:-1]))} state #{_digest(fp[-1])}".strip()
    elif kind == "members":
        text = "{" + ", ".join(fp[1]) + "}"
    elif kind == "tail":
        text = f"{len(fp[1])} more items #{_digest(repr(fp[1]).encode())}"
    elif kind == "absent":
        text = "(absent)"
    else:
        text = " ".join(str(part) for part in fp)
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + _MORE


def _named(modules) -> list[tuple[str, torch.nn.Module]]:
    if isinstance(modules, Mapping):
        return list(modules.items())
    modules = list(modules)
    names = [type(m).__name__ for m in modules]
    return [(n if names.count(n) == 1 else f"{n}#{i}", m) for i, (n, m) in enumerate(zip(names, modules))]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=4).hexdigest()


def _qualname(obj) -> str:
    kind = obj if isinstance(obj, type) else type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def _tensor(t: torch.Tensor) -> Fingerprint:
    grad = bool(t.requires_grad)
    t = t.detach()
    head = ("tensor", str(t.dtype).removeprefix("torch."), tuple(t.shape), str(t.device), grad)
    try:
        flat = t.cpu().contiguous().reshape(-1)
        data = flat.view(torch.uint8).numpy().tobytes()
        shown = ", ".join(f"{v:.6g}" if isinstance(v, float) else repr(v) for v in flat[:4].tolist())
        preview = f"[{shown}{', ' + _MORE if flat.numel() > 4 else ''}]"
    except Exception as e:  # sparse, quantized, meta, uninitialised: no bytes to read
        return head + (b"", f"(no bytes: {type(e).__name__})")
    return head + (data, preview)


def _leaf(value) -> Fingerprint | None:
    """The fingerprint of a value that has no parts; None for one that has."""
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if isinstance(value, _ATOMS):
        return ("value", type(value).__name__, repr(value))
    if isinstance(value, torch.Generator):
        return ("generator", str(value.device), value.get_state().numpy().tobytes())
    if isinstance(value, random.Random):
        return ("generator", "random.Random", repr(value.getstate()).encode())
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        data = repr(value.tolist()).encode() if value.dtype.hasobject else value.tobytes()
        return ("ndarray", str(value.dtype), tuple(value.shape), data, repr(value.reshape(-1)[:4].tolist()))
    if np is not None and isinstance(value, np.generic):
        return ("value", type(value).__name__, repr(value))
    if np is not None and isinstance(value, (np.random.Generator, np.random.RandomState)):
        state = value.bit_generator.state if isinstance(value, np.random.Generator) else value.get_state(legacy=False)
        return ("generator", f"numpy {type(value).__name__}", repr(state).encode())
    return None


def _label(key) -> str:
    """A dict key as a path shows it: repr for plain values, the type for anything else."""
    if isinstance(key, _ATOMS) and not isinstance(key, bytes):
        text = repr(key)
    elif isinstance(key, tuple) and all(isinstance(k, _ATOMS) for k in key):
        text = repr(key)
    else:
        text = f"<{type(key).__name__}>"
    return text if len(text) <= 60 else f"{text[:40]}{_MORE}#{_digest(text.encode())}"


class _Walker:
    def __init__(self, owned: list[str]):
        self.owned = frozenset(owned)
        self.entries: dict[str, Fingerprint] = {}
        # the functions and classes an implementation module defines, by the path of its global: their
        # home, wherever else they are met first (a class reached from an object it made), so paths stay put
        self.definitions = {id(value): f"{name}:{key}" for name in owned for key, value in vars(sys.modules[name]).items()
                            if isinstance(value, (types.FunctionType, type)) and value.__module__ == name}
        self.seen: dict[int, str] = {}  # an object with parts, walked once: where it was first met
        self.callables: set[int] = set()  # the functions the objects given call first: their globals are read

    def value(self, value, path: str, depth: int, stack: tuple[int, ...]) -> None:
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        leaf = _leaf(value)
        if leaf is not None:
            self.entries[path] = leaf
        elif self.definitions.get(id(value), path) != path:  # walked where its module defines it, always
            self.entries[path] = ("defined at", self.definitions[id(value)])
        elif id(value) in stack:
            self.entries[path] = ("cycle", type(value).__name__)
        elif id(value) in self.seen:
            self.entries[path] = ("the object at", self.seen[id(value)])
        elif isinstance(value, torch.nn.Module):
            self.seen[id(value)] = path
            self.module(value, path, stack)
        elif depth >= DEPTH:
            self.entries[path] = ("depth limit", type(value).__name__, _length(value))
        else:
            self.seen[id(value)] = path
            self.parts(value, path, depth, stack + (id(value),))

    def parts(self, value, path: str, depth: int, stack: tuple[int, ...]) -> None:
        """A value with parts: a container, or one of the subject's functions, classes and objects."""
        if isinstance(value, _CONTAINERS):
            self.container(value, path, depth, stack)
        elif isinstance(value, functools.partial):
            self.entries[path] = ("partial",)
            self.attributes({"func": value.func, "args": value.args, "keywords": value.keywords}, path, depth, stack)
        elif isinstance(value, types.MethodType):
            self.entries[path] = ("method", value.__func__.__qualname__)
            self.attributes({"__self__": value.__self__, "__func__": value.__func__}, path, depth, stack)
        elif isinstance(value, types.FunctionType) and not infrastructure(value.__module__):
            self.function(value, path, depth, stack)
        elif isinstance(value, type) and not infrastructure(value.__module__):
            self.entries[path] = ("class", value.__qualname__)
            self.attributes(dict(vars(value)), path, depth, stack)
        elif isinstance(value, types.SimpleNamespace) or (
                not isinstance(value, (type, types.FunctionType, types.ModuleType))
                and not infrastructure(type(value).__module__)):
            self.entries[path] = ("object", _qualname(value))
            self.attributes(_instance_attributes(value), path, depth, stack)
            self.classes(type(value), path, depth, stack)
        elif "__wrapped__" in getattr(value, "__dict__", {}):  # infrastructure's wrapper (the output check)
            self.entries[path] = ("wrapper", _qualname(value))
            self.value(value.__dict__["__wrapped__"], f"{path}.__wrapped__", depth + 1, stack)
        else:
            self.entries[path] = ("opaque", _qualname(value))  # infrastructure (see the module docstring)

    def classes(self, kind: type, path: str, depth: int, stack: tuple[int, ...]) -> None:
        """The class attributes of each of the subject's classes in `kind`'s MRO (a counter kept on a class)."""
        for base in kind.__mro__:
            if not infrastructure(base.__module__):
                self.value(base, f"{path}.<class {base.__qualname__}>", depth + 1, stack)

    def attributes(self, attributes: Mapping, path: str, depth: int, stack: tuple[int, ...]) -> None:
        for key, value in list(attributes.items()):
            self.value(value, f"{path}.{key}", depth + 1, stack)

    def container(self, value, path: str, depth: int, stack: tuple[int, ...]) -> None:
        self.entries[path] = ("container", type(value).__name__, len(value))
        if isinstance(value, (set, frozenset)):
            self.entries[f"{path}{{}}"] = ("members", tuple(sorted(_label(v) for v in value)))
            return
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        labels: dict[str, int] = {}
        for key, item in items[:ITEMS]:
            label = _label(key) if isinstance(value, dict) else str(key)
            labels[label] = labels.get(label, 0) + 1
            label = label if labels[label] == 1 else f"{label}#{labels[label]}"
            self.value(item, f"{path}[{label}]", depth + 1, stack)
        if len(items) > ITEMS:  # the rest by their leaves, or type and length
            self.entries[f"{path}[{ITEMS}:]"] = ("tail", tuple(
                (_label(k), _leaf(v) or (type(v).__name__, _length(v)))
                for k, v in items[ITEMS:]))

    def function(self, fn: types.FunctionType, path: str, depth: int, stack: tuple[int, ...]) -> None:
        self.entries[path] = ("function", fn.__qualname__)
        self.attributes(vars(fn), path, depth, stack)
        if fn.__defaults__:
            self.value(fn.__defaults__, f"{path}.__defaults__", depth + 1, stack)
        if fn.__kwdefaults__:
            self.value(fn.__kwdefaults__, f"{path}.__kwdefaults__", depth + 1, stack)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                content = cell.cell_contents
            except ValueError:  # a cell not yet filled
                self.entries[f"{path}.<closure {name}>"] = ("empty cell",)
                continue
            self.value(content, f"{path}.<closure {name}>", depth + 1, stack)
        if id(fn) in self.callables and fn.__module__ not in self.owned:  # the subject's own callable (an adapter's)
            for name in _global_names(fn.__code__):
                if name in fn.__globals__ and not isinstance(fn.__globals__[name], types.ModuleType):
                    self.value(fn.__globals__[name], f"{path}.<global {name}>", depth + 1, stack)

    def module(self, module: torch.nn.Module, path: str, stack: tuple[int, ...]) -> None:
        self.entries[path] = ("nn.Module", _qualname(module))
        attributes = vars(module)
        for group in ("_parameters", "_buffers"):
            for name, tensor in attributes.get(group, {}).items():
                self.entries[f"{path}.{name}"] = ("value", "NoneType", "None") if tensor is None else _tensor(tensor)
        for name, child in attributes.get("_modules", {}).items():
            self.value(child, f"{path}.{name}", 0, stack)
        for key, value in list(attributes.items()):
            if key not in ("_parameters", "_buffers", "_modules"):
                self.value(value, f"{path}.{key}", 1, stack + (id(module),))
        self.classes(type(module), path, 1, stack + (id(module),))

    def rngs(self) -> None:
        self.entries["rng:torch"] = ("rng", "torch cpu", torch.get_rng_state().numpy().tobytes())
        if torch.cuda.is_initialized():
            for i, state in enumerate(torch.cuda.get_rng_state_all()):
                self.entries[f"rng:torch.cuda:{i}"] = ("rng", f"torch cuda:{i}", state.numpy().tobytes())
        np = sys.modules.get("numpy")
        if np is not None:
            kind, keys, pos, has_gauss, cached = np.random.get_state()
            self.entries["rng:numpy"] = ("rng", "numpy", kind.encode() + keys.tobytes()
                                         + repr((pos, has_gauss, cached)).encode())
        self.entries["rng:random"] = ("rng", "random", repr(random.getstate()).encode())


def _called(value, depth: int = 0) -> set[int]:
    """The ids of the functions a callable root runs first: itself, and what a partial, a wrapper (__wrapped__),
    a bound method or a callable object's __call__ hands the call to."""
    if depth > DEPTH or value is None:
        return set()
    if isinstance(value, types.FunctionType):
        return {id(value)} | _called(value.__dict__.get("__wrapped__"), depth + 1)
    if isinstance(value, functools.partial):
        return _called(value.func, depth + 1)
    if isinstance(value, types.MethodType):
        return _called(value.__func__, depth + 1)
    inner = getattr(value, "__dict__", {}).get("__wrapped__")
    call = getattr(type(value), "__call__", None)
    return _called(inner, depth + 1) | (_called(call, depth + 1) if isinstance(call, types.FunctionType) else set())


def _length(value) -> int | str:
    return len(value) if isinstance(value, _CONTAINERS) else ""


def _global_names(code: types.CodeType) -> list[str]:
    """The global names a function's code (and the code nested in it: lambdas, comprehensions) reads."""
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _global_names(const)
    return list(dict.fromkeys(names))


def _instance_attributes(value) -> dict:
    attributes = dict(getattr(value, "__dict__", {}))
    for kind in type(value).__mro__:
        slots = getattr(kind, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                attributes[name] = getattr(value, name)
    return attributes
