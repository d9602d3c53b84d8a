"""A snapshot of the state a call can touch, flat ({path: fingerprint}), so two compare entry by entry.

What it covers (fidelity.gates.statelessness takes one after a call and one after more calls):
- each torch.nn.Module given and every submodule: parameters and buffers by bits (dtype, shape,
  device, requires_grad, bytes), and every other attribute in its __dict__ (a `_calls` counter a
  forward adds, a `t_max` it decrements, the `training` flag);
- each implementation module named (only those already imported: nothing of one not imported
  ran): its globals (a `_CALLS` list that grows), and the __dict__, defaults and closure cells of
  the functions and classes defined in it (a `sinkhorn.calls` set on the function object);
- the global RNGs: torch (CPU, and CUDA once initialised), numpy and Python's `random`.

Values by kind: tensors and numpy arrays by bits; numbers, str, bytes, bool, None (and torch's
dtype, device, Size) by repr; list, tuple, dict, set item by item (DEPTH levels deep, a cycle
cut where it closes); objects of classes defined in the snapshotted modules by their __dict__;
a torch.Generator by its state; anything else by its type alone.

Paths read like the code: `module.mhc.t_max`, `fidelity.impl.torch.sinkhorn:sinkhorn.calls`,
`fidelity.impl.torch.depth_attention:_CALLS[2]`, `rng:torch`.
"""
from __future__ import annotations

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

Fingerprint = tuple
ABSENT = ("absent",)
_ATOMS = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size)
_CONTAINERS = (list, tuple, dict, set, frozenset)
_MORE = "\u2026"


def snapshot(*, modules: Mapping[str, torch.nn.Module] | Iterable[torch.nn.Module] = (),
             implementation: Iterable[str] = ()) -> dict[str, Fingerprint]:
    """{path: fingerprint} of `modules` (named, or named by their class), the modules named in
    `implementation` (already imported), and the global RNG states."""
    names = [name for name in dict.fromkeys(implementation) if name in sys.modules]
    walker = _Walker(frozenset(names))
    for name, module in _named(modules):
        walker.value(module, name, 0, ())
    for name in names:
        for key, value in list(vars(sys.modules[name]).items()):
            if key == "__builtins__":
                continue
            home = getattr(value, "__module__", None)
            if isinstance(value, (types.FunctionType, type)) and home != name and home in walker.owned:
                walker.entries[f"{name}:{key}"] = ("defined in", home)  # snapshotted under its own module
            else:
                walker.value(value, f"{name}:{key}", 1, ())
    walker.rngs()
    return walker.entries


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
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        data = repr(value.tolist()).encode() if value.dtype.hasobject else value.tobytes()
        return ("ndarray", str(value.dtype), tuple(value.shape), data, repr(value.reshape(-1)[:4].tolist()))
    if np is not None and isinstance(value, np.generic):
        return ("value", type(value).__name__, repr(value))
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
    def __init__(self, owned: frozenset[str]):
        self.owned = owned
        self.entries: dict[str, Fingerprint] = {}
        self.modules_seen: dict[int, str] = {}

    def value(self, value, path: str, depth: int, stack: tuple[int, ...]) -> None:
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        leaf = _leaf(value)
        if leaf is not None:
            self.entries[path] = leaf
        elif isinstance(value, torch.nn.Module):
            self.module(value, path, stack)
        elif id(value) in stack:
            self.entries[path] = ("cycle", type(value).__name__)
        elif depth >= DEPTH:
            self.entries[path] = ("depth limit", type(value).__name__, len(value) if hasattr(value, "__len__") else "")
        elif isinstance(value, _CONTAINERS):
            self.container(value, path, depth, stack + (id(value),))
        elif isinstance(value, types.FunctionType) and value.__module__ in self.owned:
            self.function(value, path, depth, stack + (id(value),))
        elif isinstance(value, type) and value.__module__ in self.owned:
            self.entries[path] = ("class", value.__qualname__)
            self.attributes(vars(value), path, depth, stack + (id(value),))
        elif type(value).__module__ in self.owned:
            self.entries[path] = ("object", _qualname(value))
            self.attributes(_instance_attributes(value), path, depth, stack + (id(value),))
        else:
            # Opaque, by type only: the contents of modules, third-party objects (a triton JITFunction
            # whose compile cache fills on use, an lru_cache wrapper, torch internals) are not the
            # subject's state; reading them would call a legitimate cache a defect.
            self.entries[path] = ("opaque", _qualname(value))

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
                (_label(k), _leaf(v) or (type(v).__name__, len(v) if hasattr(v, "__len__") else ""))
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

    def module(self, module: torch.nn.Module, path: str, stack: tuple[int, ...]) -> None:
        if id(module) in self.modules_seen:
            self.entries[path] = ("the module at", self.modules_seen[id(module)])
            return
        self.modules_seen[id(module)] = path
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


def _instance_attributes(value) -> dict:
    attributes = dict(getattr(value, "__dict__", {}))
    for kind in type(value).__mro__:
        slots = getattr(kind, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                attributes[name] = getattr(value, name)
    return attributes
