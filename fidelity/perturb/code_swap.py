"""Serve a patch to a module that is ALREADY imported, by giving its functions the patched code.

The import hook (import_hook.py) must be installed before anything imports the target, so each
perturbation child pays for a fresh pytest collection. Blind-spot discovery runs hundreds of
mutants of one module over the same gates; batch.py collects once and forks a process per
mutant, which calls `swap_in` to turn the imported module into the mutant in place:

- the patched source is executed as a new module object (nothing on disk, nothing in
  sys.modules), and the two namespaces are paired name by name;
- a function gets the patched function's code, defaults and keyword defaults (`__code__` is
  assigned, so every reference to it anywhere, `from m import f`, a subject's table, a
  decorator's closure, an autograd Function's staticmethod, runs the new code); decorated
  functions are followed through `__wrapped__`, staticmethod/classmethod/property through
  their functions;
- a class keeps its identity (isinstance still holds) and gets the same treatment for each
  attribute of its body; a method that calls super() holds its class in a closure cell
  (`__class__`), which pairs with the class already being paired, and keeps the old class.

Anything this cannot make identical to a fresh import raises SwapImpossible, and the caller
runs that mutant the ordinary way (a fresh child with the import hook): a module-level value
that differs (another module may hold a copy of it), a name only one side has, a function
whose closure cells differ, code with other free variables, a mutant that fails to execute.
"""
from __future__ import annotations

import linecache
import types
from typing import Any

_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset)
_SKIP_CLASS_ATTRS = {"__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "__annotations__"}


class SwapImpossible(Exception):
    """The patch cannot be served by swapping code in place; run it in a fresh child."""


def swap_in(module: types.ModuleType, path: str, source: str) -> None:
    """Make `module` (imported from `path`) behave as a fresh import of `source`."""
    fresh = types.ModuleType(module.__name__)
    for attr in ("__file__", "__package__", "__spec__", "__loader__", "__path__"):
        if hasattr(module, attr):
            setattr(fresh, attr, getattr(module, attr))
    try:
        exec(compile(source, path, "exec", dont_inherit=True), fresh.__dict__)  # noqa: S102 - the patch
    except Exception as exc:
        raise SwapImpossible(f"the patched module fails to execute: {type(exc).__name__}: {exc}") from None
    old, new = module.__dict__, fresh.__dict__
    extra = sorted(n for n in set(new) ^ set(old) if not _machinery(n))
    if extra:
        raise SwapImpossible(f"names only one side has: {extra[:5]}")
    plan = _Plan()  # (old function, new function): nothing is changed until all pair
    for name, value in new.items():
        if _machinery(name):
            continue
        _pair(old[name], value, f"{module.__name__}.{name}", module.__name__, plan)
    for old_fn, new_fn in plan.swaps:
        old_fn.__code__ = new_fn.__code__
        old_fn.__defaults__ = new_fn.__defaults__
        old_fn.__kwdefaults__ = new_fn.__kwdefaults__
    # tracebacks and pytest show the patched lines, as under the import hook
    lines = source.splitlines(keepends=True)
    linecache.cache[path] = (len(source), None, lines, path)


def _machinery(name: str) -> bool:
    """A module attribute of the import system or pytest's assertion rewriter (@py_builtins),
    not of the source."""
    return name.startswith("@") or (name.startswith("__") and name.endswith("__"))


class _Plan:
    """The function pairs to swap, and the class pairs already paired or being paired (a method's
    `__class__` cell leads back to its own class: met again, that pair is not walked twice)."""

    def __init__(self) -> None:
        self.swaps: list[tuple[Any, Any]] = []
        self.classes: set[tuple[int, int]] = set()

    def append(self, pair: tuple[Any, Any]) -> None:
        self.swaps.append(pair)


def _pair(old: Any, new: Any, where: str, module_name: str, plan: _Plan, depth: int = 0) -> None:
    if old is new:
        return
    if depth > 8:
        raise SwapImpossible(f"{where}: nested too deep to pair")
    if isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType):
        _pair_function(old, new, where, module_name, plan, depth)
    elif isinstance(old, (staticmethod, classmethod)) and type(old) is type(new):
        _pair(old.__func__, new.__func__, where, module_name, plan, depth + 1)
    elif isinstance(old, property) and isinstance(new, property):
        for part in ("fget", "fset", "fdel"):
            a, b = getattr(old, part), getattr(new, part)
            if (a is None) != (b is None):
                raise SwapImpossible(f"{where}: property {part} on one side only")
            if a is not None:
                _pair(a, b, f"{where}.{part}", module_name, plan, depth + 1)
    elif isinstance(old, type) and isinstance(new, type):
        if old.__module__ != module_name or old.__qualname__ != new.__qualname__:
            if old is not new:  # a class imported from elsewhere is the same object on both sides
                raise SwapImpossible(f"{where}: two different classes")
            return
        if (id(old), id(new)) not in plan.classes:
            plan.classes.add((id(old), id(new)))
            _pair_class(old, new, where, module_name, plan, depth)
    elif isinstance(old, dict) and type(old) is type(new):  # a table of the module's functions
        if list(old) != list(new) or not all(isinstance(k, _IMMUTABLE) for k in old):
            raise SwapImpossible(f"{where}: other keys")
        for k in old:
            _pair(old[k], new[k], f"{where}[{k!r}]", module_name, plan, depth + 1)
    elif isinstance(old, (list, tuple)) and type(old) is type(new) and not _all_immutable(old):
        if len(old) != len(new):
            raise SwapImpossible(f"{where}: another length")
        for i, (a, b) in enumerate(zip(old, new)):
            _pair(a, b, f"{where}[{i}]", module_name, plan, depth + 1)
    elif isinstance(old, types.ModuleType) or isinstance(new, types.ModuleType):
        raise SwapImpossible(f"{where}: a module on one side only")  # same module would be `is`
    elif _same_value(old, new):
        return
    else:
        raise SwapImpossible(f"{where}: the value differs ({_short(old)} vs {_short(new)})")


def _pair_function(old, new, where, module_name, plan, depth) -> None:
    old_inner, new_inner = getattr(old, "__wrapped__", None), getattr(new, "__wrapped__", None)
    if old_inner is not None and new_inner is not None:  # a decorator's wrapper: swap what it wraps
        _pair(old_inner, new_inner, where, module_name, plan, depth + 1)
    if old.__code__.co_freevars != new.__code__.co_freevars:
        raise SwapImpossible(f"{where}: other free variables")
    for i, (a, b) in enumerate(zip(old.__closure__ or (), new.__closure__ or ())):
        try:
            a_val, b_val = a.cell_contents, b.cell_contents
        except ValueError:  # an empty cell on either side
            raise SwapImpossible(f"{where}: an empty closure cell") from None
        if a_val is old_inner and b_val is new_inner and old_inner is not None:
            continue  # the wrapped function, paired above
        _pair(a_val, b_val, f"{where}.<cell {i}>", module_name, plan, depth + 1)
    plan.append((old, new))


def _pair_class(old: type, new: type, where: str, module_name: str, plan: _Plan, depth: int) -> None:
    if [b.__qualname__ for b in old.__mro__] != [b.__qualname__ for b in new.__mro__]:
        raise SwapImpossible(f"{where}: other base classes")
    a, b = dict(vars(old)), dict(vars(new))
    names = (set(a) | set(b)) - _SKIP_CLASS_ATTRS
    for name in sorted(names):
        if name not in a or name not in b:
            raise SwapImpossible(f"{where}.{name}: on one side only")
        if name == "_backward_cls" and getattr(a[name], "_forward_cls", None) is old:
            continue  # torch.autograd.Function's metaclass makes one per class: it only points back
        if name.startswith("__") and name.endswith("__") and not isinstance(
                a[name], (types.FunctionType, staticmethod, classmethod, property)):
            continue  # what type() made for each class (__init_subclass__ caches, slots, abc data)
        _pair(a[name], b[name], f"{where}.{name}", module_name, plan, depth + 1)


def _same_value(a: Any, b: Any) -> bool:
    """Equal plain values (a constant, a tuple or set of constants); anything else must be the
    same object, or a container _pair walks."""
    if type(a) is not type(b) or not isinstance(a, (*_IMMUTABLE, set)) or not _all_immutable(a):
        return False
    try:
        return bool(a == b) and repr(a) == repr(b)  # repr: 0.0 and -0.0, 1 and True told apart
    except Exception:
        return False


def _all_immutable(value) -> bool:
    if isinstance(value, (tuple, list, set, frozenset)):
        return all(_all_immutable(v) for v in value)
    return isinstance(value, _IMMUTABLE)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
