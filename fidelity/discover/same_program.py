"""Two executions of a module that built the same program: every name bound to an equal value.

A mutant that reorders two independent module-level assignments (`ARMS = ...` and `ACTIVATIONS = ...`
swapped) changes no value any code can read, yet no probe can show it: module-level statements run at
import, where the line trace does not look, so such a mutant stayed "undecided". When the mutated
module, executed, binds every name the original binds to an equal value (a function to equal code,
defaults and closure; a class to the same bases and equal attributes in the same order; anything
else to an equal constant, or to the very object the original holds, e.g. an imported module), the
two are one program and the mutant is equivalent, whatever its lines. Anything this cannot prove
equal (a tensor built at import, an object of another kind) is "not proven", never "different":
the probes then decide as before. Line numbers are not compared (they move no result).
"""
from __future__ import annotations

import types
from typing import Any

_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None))
_CODE_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_flags", "co_code", "co_names",
                "co_varnames", "co_freevars", "co_cellvars", "co_name", "co_qualname")
_CLASS_SLOTS = ("__dict__", "__weakref__")  # per-class descriptors: never the same object, nothing to compare
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python, not in C
_UNSET = object()    # a slot never assigned


def same_program(original: types.ModuleType, mutant: types.ModuleType) -> bool:
    """Whether the two executed modules bind the same names to equal values (see the module docstring)."""
    a, b = _names(original), _names(mutant)
    return a.keys() == b.keys() and all(_equal(a[k], b[k], original, mutant, set()) for k in a)


def _names(module: types.ModuleType) -> dict[str, Any]:
    return {k: v for k, v in vars(module).items() if not (k.startswith("__") and k.endswith("__"))
            and not k.startswith("@")}


def _equal(x: Any, y: Any, original, mutant, seen: set) -> bool:
    if x is y:
        return True
    if isinstance(x, type) and isinstance(y, type):
        return _same_class(x, y, original, mutant, seen)
    if type(x) is not type(y):
        return False
    if isinstance(x, _IMMUTABLE):
        return x == y or (x != x and y != y)  # NaN constants are equal to themselves here
    if isinstance(x, (tuple, list)):
        return len(x) == len(y) and all(_equal(p, q, original, mutant, seen) for p, q in zip(x, y))
    if isinstance(x, (set, frozenset)):
        return x == y  # hashable members: equal by value, or the very same object
    if isinstance(x, dict):
        return list(x) == list(y) and all(_equal(x[k], y[k], original, mutant, seen) for k in x)
    if isinstance(x, types.CodeType):
        return _same_code(x, y, original, mutant, seen)
    if isinstance(x, types.FunctionType):
        return _same_function(x, y, original, mutant, seen)
    if isinstance(x, (staticmethod, classmethod)):
        return _equal(x.__func__, y.__func__, original, mutant, seen)
    if isinstance(x, property):
        return all(_equal(getattr(x, f), getattr(y, f), original, mutant, seen) for f in ("fget", "fset", "fdel"))
    state_x, state_y = _python_state(x), _python_state(y)
    return state_x is not None and _equal(state_x, state_y, original, mutant, seen)


def _python_state(obj: Any) -> dict | None:
    """An object's whole state when all of it is Python attributes (a dataclass Field, its params):
    None for a type with any C-level part (a tensor, a generator), whose state cannot be read here."""
    classes = [c for c in type(obj).__mro__ if c is not object]
    if not all(c.__flags__ & _HEAP_TYPE for c in classes):
        return None
    slots = [name for c in classes for name in ([c.__slots__] if isinstance(c.__dict__.get("__slots__"), str)
                                                 else c.__dict__.get("__slots__", ()))]
    state = {f"slot {name}": getattr(obj, name, _UNSET) for name in slots}
    state.update(getattr(obj, "__dict__", {}))
    return state


def _same_code(x: types.CodeType, y: types.CodeType, original, mutant, seen) -> bool:
    return (all(getattr(x, f) == getattr(y, f) for f in _CODE_FIELDS)
            and _equal(x.co_consts, y.co_consts, original, mutant, seen))


def _same_function(x: types.FunctionType, y: types.FunctionType, original, mutant, seen) -> bool:
    own_x, own_y = x.__globals__ is vars(original), y.__globals__ is vars(mutant)
    if own_x != own_y or not (own_x or x.__globals__ is y.__globals__):
        return False  # each must read its own module's names, or both the same other namespace
    cells = [(p.cell_contents, q.cell_contents) for p, q in zip(x.__closure__ or (), y.__closure__ or ())]
    return (len(x.__closure__ or ()) == len(y.__closure__ or ())
            and _same_code(x.__code__, y.__code__, original, mutant, seen)
            and _equal(x.__defaults__, y.__defaults__, original, mutant, seen)
            and _equal(x.__kwdefaults__, y.__kwdefaults__, original, mutant, seen)
            and all(_equal(p, q, original, mutant, seen) for p, q in cells))


def _same_class(x: type, y: type, original, mutant, seen) -> bool:
    if x.__module__ != y.__module__ or x.__qualname__ != y.__qualname__:
        return False
    if x.__module__ != original.__name__:
        return False  # two distinct classes of another module: not the same object, so not the same program
    if (x, y) in seen:  # a class reached again through itself (a method's default, a nested reference)
        return True
    seen.add((x, y))
    if len(x.__bases__) != len(y.__bases__) or not all(
            _equal(p, q, original, mutant, seen) for p, q in zip(x.__bases__, y.__bases__)):
        return False
    a = {k: v for k, v in vars(x).items() if k not in _CLASS_SLOTS}
    b = {k: v for k, v in vars(y).items() if k not in _CLASS_SLOTS}
    return list(a) == list(b) and all(_equal(a[k], b[k], original, mutant, seen) for k in a)
