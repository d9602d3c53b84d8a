"""Read a mechanism's Protocols into plain, JSON-able dicts (what docs.py renders, what the tests compare).

Everything comes from the Protocol source: inspect.signature for arguments and defaults,
typing.get_type_hints(include_extras=True) for types and the markers (Doc, Param, Submodule)
written in Annotated, and docstrings. Nothing here restates a mechanism's facts.
"""
from __future__ import annotations

import collections.abc
import inspect
import sys
import types
import typing
from typing import Any, Iterator

import torch

from .markers import Doc, Param, Submodule
from .mechanism import Mechanism

_SHORT_NAMES = {torch.Tensor: "Tensor", torch.nn.Parameter: "Parameter", torch.dtype: "torch.dtype",
                torch.device: "torch.device", torch.Generator: "torch.Generator"}


# ---------------------------------------------------------------- annotations


def split_annotated(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """Annotated[T, m1, m2] -> (T, (m1, m2)); any other hint -> (hint, ())."""
    if typing.get_origin(hint) is typing.Annotated:
        return hint.__origin__, tuple(hint.__metadata__)
    return hint, ()


def marker(metadata: tuple[Any, ...], kind: type) -> Any:
    """The first marker of `kind` in an Annotated's metadata, or None."""
    return next((m for m in metadata if isinstance(m, kind)), None)


def type_text(tp: Any) -> str:
    """A type as a reader writes it: Tensor | None, tuple[Tensor, Tensor], Callable[[Tensor], Tensor]."""
    if tp is type(None) or tp is None:
        return "None"
    if tp is Ellipsis:
        return "..."
    if isinstance(tp, (list, tuple)):
        return "[" + ", ".join(type_text(t) for t in tp) + "]"
    if tp in _SHORT_NAMES:
        return _SHORT_NAMES[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_text(a) for a in args)
    if origin is collections.abc.Callable:
        params, ret = args
        return f"Callable[{type_text(params)}, {type_text(ret)}]"
    if origin is not None:
        name = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        return f"{name}[{', '.join(type_text(a) for a in args)}]"
    if isinstance(tp, type):
        return tp.__qualname__
    return str(tp).replace("typing.", "")


def _hints(obj: Any) -> dict[str, Any]:
    return typing.get_type_hints(obj, include_extras=True)


def _own_doc(obj: Any) -> str:
    """The object's own docstring, cleaned; never one inherited (a bare __call__ is not "Call self as a function")."""
    return inspect.cleandoc(obj.__doc__) if obj.__doc__ else ""


# ---------------------------------------------------------------- callables


def _argument(param: inspect.Parameter, hint: Any) -> dict[str, Any]:
    tp, meta = split_annotated(hint)
    doc = marker(meta, Doc)
    required = param.default is inspect.Parameter.empty
    return {
        "name": param.name,
        "kind": "keyword" if param.kind is inspect.Parameter.KEYWORD_ONLY else "positional",
        "type": type_text(tp),
        "shape": doc.shape if doc else None,
        "doc": doc.text if doc else "",
        "required": required,
        "default": None if required else repr(param.default),
    }


def _returns(hint: Any) -> dict[str, Any]:
    tp, meta = split_annotated(hint)
    doc = marker(meta, Doc)
    return {"type": type_text(tp), "shape": doc.shape if doc else None, "doc": doc.text if doc else ""}


def signature_text(name: str, arguments: list[dict[str, Any]], returns: dict[str, Any]) -> str:
    parts, star = [], False
    for a in arguments:
        if a["kind"] == "keyword" and not star:
            parts.append("*")
            star = True
        parts.append(a["name"] if a["required"] else f"{a['name']}={a['default']}")
    return f"{name}({', '.join(parts)}) -> {returns['type']}"


def call_parameters(func: Any) -> list[inspect.Parameter]:
    """The parameters of a Protocol method or of an implementation, without self."""
    params = list(inspect.signature(func).parameters.values())
    return params[1:] if params and params[0].name == "self" else params


def describe_method(name: str, func: Any, shown_as: str | None = None) -> dict[str, Any]:
    hints = _hints(func)
    arguments = [_argument(p, hints.get(p.name)) for p in call_parameters(func)]
    returns = _returns(hints.get("return"))
    return {"name": name, "doc": _own_doc(func), "arguments": arguments, "returns": returns,
            "signature": signature_text(shown_as or name, arguments, returns)}


# ---------------------------------------------------------------- protocols


def _is_protocol(tp: Any) -> bool:
    return isinstance(tp, type) and bool(getattr(tp, "_is_protocol", False))


def describe_protocol(cls: type) -> dict[str, Any]:
    """Parameters, submodules, attributes (with defaults where the Protocol gives them) and methods of `cls`."""
    parameters, submodules, attributes, methods = [], [], [], []
    for name, hint in _hints(cls).items():
        tp, meta = split_annotated(hint)
        param, sub, doc = marker(meta, Param), marker(meta, Submodule), marker(meta, Doc)
        if param is not None:
            parameters.append({"name": name, "shape": param.shape, "doc": param.text, "init": param.init,
                               "when": dict(param.when)})
        elif sub is not None:
            submodules.append({"name": name, "type": type_text(tp), "doc": sub.text, "when": dict(sub.when)})
        else:
            default = vars(cls).get(name, inspect.Parameter.empty)
            attributes.append({"name": name, "type": type_text(tp), "shape": doc.shape if doc else None,
                               "doc": doc.text if doc else "",
                               "default": None if default is inspect.Parameter.empty else repr(default)})
    for name, member in vars(cls).items():
        if inspect.isfunction(member) and (name == "__call__" or not name.startswith("_")):
            methods.append(describe_method(name, member))
    return {"name": cls.__qualname__, "module": cls.__module__, "doc": _own_doc(cls),
            "parameters": parameters, "submodules": submodules, "attributes": attributes, "methods": methods}


def named_parameters(cls: type, prefix: str = "") -> Iterator[tuple[str, Param, dict[str, Any]]]:
    """Every documented parameter of a module Protocol as nn.Module.named_parameters() names it.

    Yields (name, Param, when): `when` joins the conditions on the way down, a child's own
    conditions qualified by its submodule's name (hc.dynamic_alpha_fn: {"hc.dynamic": True}).
    """
    for name, hint in _hints(cls).items():
        tp, meta = split_annotated(hint)
        param, sub = marker(meta, Param), marker(meta, Submodule)
        if param is not None:
            yield f"{prefix}{name}", param, dict(param.when)
        elif sub is not None and _is_protocol(tp):
            for child, child_param, child_when in named_parameters(tp, f"{prefix}{name}."):
                when = {f"{name}.{k}": v for k, v in child_when.items()}
                yield child, child_param, {**sub.when, **when}


def owning_mechanism(cls: type) -> Mechanism | None:
    """The Mechanism declared beside `cls` (its module's MECHANISM) whose interface or module interface it is."""
    mechanism = getattr(sys.modules.get(cls.__module__), "MECHANISM", None)
    if isinstance(mechanism, Mechanism) and cls in (mechanism.interface, mechanism.module_interface):
        return mechanism
    return None


def referenced_protocols(cls: type, stop: Any = lambda p: False) -> list[type]:
    """Protocols that `cls`'s annotations name (arguments, returns, attributes, submodules), recursively, in order.

    A Protocol for which `stop(p)` is true is listed but not walked into.
    """
    seen: list[type] = []

    def visit(tp: Any) -> None:
        tp, _ = split_annotated(tp)
        if _is_protocol(tp):
            if tp not in seen:
                seen.append(tp)
                if not stop(tp):
                    walk(tp)
            return
        for arg in typing.get_args(tp):
            visit(arg)

    def walk(klass: type) -> None:
        for hint in _hints(klass).values():
            visit(hint)
        for member in vars(klass).values():
            if inspect.isfunction(member):
                for hint in _hints(member).values():
                    visit(hint)

    walk(cls)
    return [p for p in seen if p is not cls]


def _type_record(p: type, owner: Mechanism | None) -> dict[str, Any]:
    if owner is None:
        return {**describe_protocol(p), "see_mechanism": None}
    return {"name": p.__qualname__, "module": p.__module__, "see_mechanism": owner.name}


def describe(mechanism: Mechanism) -> dict[str, Any]:
    """The whole documentation of one mechanism as a JSON-able dict."""
    interface = mechanism.interface
    call = describe_method("__call__", interface.__call__, "factory" if mechanism.kind == "module" else "fn")
    roots = [interface] + ([mechanism.module_interface] if mechanism.module_interface else [])

    def foreign(p: type) -> Mechanism | None:  # another mechanism's interface: pointed to, not repeated
        owner = owning_mechanism(p)
        return owner if owner is not None and owner.name != mechanism.name else None

    others: list[type] = []
    for root in roots:
        others += [p for p in referenced_protocols(root, stop=foreign) if p not in roots and p not in others]
    record = {
        "name": mechanism.name,
        "kind": mechanism.kind,
        "summary": mechanism.summary,
        "equations": list(mechanism.equations),
        "declared_in": interface.__module__,
        "interface": {"name": interface.__qualname__, "doc": _own_doc(interface), "call": call},
        "module": None,
        "types": [_type_record(p, foreign(p)) for p in others],
    }
    if mechanism.module_interface is not None:
        module = describe_protocol(mechanism.module_interface)
        module["named_parameters"] = [{"name": n, "shape": p.shape, "when": when}
                                      for n, p, when in named_parameters(mechanism.module_interface)]
        record["module"] = module
    return record
