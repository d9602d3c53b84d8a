"""The output contract every gate holds a subject to: floating outputs keep the inputs' dtype and device.

A subject that returns float64 for float32 input would otherwise be judged at float64's tolerance
(or a float32 reading from a float16 kernel at float32's) without a word. The plugin's `subject`
fixture hands gates `checked(subject)`; its `get(mechanism)` wraps
- a function mechanism: every call's floating tensor outputs are checked against its floating
  tensor inputs;
- a module factory: the module it builds is checked on every call (forward) and on the public
  methods its mechanism's module Protocol declares (fidelity.mechanisms), against that call's
  floating tensor inputs, or against the factory's `dtype=` / `device=` where a call has none.

A violation raises OutputContractViolation, an AssertionError raised from this file (under
fidelity/gates/), so the perturbation recorder classifies it as the gate's own assertion: a
finding, e.g. "silent cast: float32 in, float64 out from sinkhorn".

Only the outermost checked call checks: a module's forward calling its own checked method is
judged once, at the call the gate made (and the raise stays outside torch's frames).
"""
from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable

import torch

from fidelity.gates import within_capability
from fidelity.gates.tensors import floating_tensors


class OutputContractViolation(AssertionError):
    """A subject's output changed dtype or device from its input's: a finding about the subject."""


_state = threading.local()


class _Outermost:
    """Context: True for the outermost checked call on this thread, False for one nested in it."""

    def __enter__(self) -> bool:
        depth = getattr(_state, "depth", 0)
        _state.depth = depth + 1
        return depth == 0

    def __exit__(self, *exc) -> None:
        _state.depth -= 1


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _matches_device(actual: torch.device, declared: torch.device) -> bool:
    """A declared device "cuda" holds any CUDA index; "cuda:1" only index 1."""
    return actual.type == declared.type and (declared.index is None or actual.index == declared.index)


def check_outputs(where: str, inputs: Any, output: Any, *, dtype: torch.dtype | None = None,
                  device: torch.device | str | None = None) -> None:
    """Raise OutputContractViolation when a floating output's dtype or device is not its inputs'.

    The reference is the floating tensors among `inputs`; where there are none, the declared
    `dtype` / `device` (a factory's keywords); where neither exists, nothing is checked.
    Mixed input dtypes (or devices) admit any of them: which one wins is the mechanism's contract.
    """
    ins = list(floating_tensors(inputs))
    outs = list(floating_tensors(output))
    if not outs:
        return
    if ins:
        dtypes = {t.dtype for t in ins}
        devices = {t.device for t in ins}
        dtype_ok = lambda t: t.dtype in dtypes  # noqa: E731
        device_ok = lambda t: t.device in devices  # noqa: E731
        dtype_in = "/".join(sorted(_name(d) for d in dtypes))
        device_in = "/".join(sorted(str(d) for d in devices))
        source = "in"
    else:
        if dtype is None and device is None:
            return
        declared = torch.device(device) if device is not None else None
        dtype_ok = lambda t: dtype is None or t.dtype == dtype  # noqa: E731
        device_ok = lambda t: declared is None or _matches_device(t.device, declared)  # noqa: E731
        dtype_in = _name(dtype) if dtype is not None else ""
        device_in = str(declared) if declared is not None else ""
        source = "asked for"
    for t in outs:
        if not dtype_ok(t):
            raise OutputContractViolation(
                f"silent cast: {dtype_in} {source}, {_name(t.dtype)} out from {where}; a subject computes in "
                f"its input's dtype and never casts (its output would be judged at the wrong tolerance)")
        if not device_ok(t):
            raise OutputContractViolation(
                f"device change: {device_in} {source}, {t.device} out from {where}; a subject computes on "
                f"its input's device")


class _CheckedCallable:
    """A subject's function mechanism or module factory, with its outputs checked."""

    def __init__(self, fn: Callable, mechanism: str, subject: str, capability=None):
        self.__wrapped__ = fn
        self._mechanism = mechanism
        self._subject = subject
        self._capability = capability
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        within_capability.require(self._capability, self._where(), (args, kwargs),
                                  dtype=kwargs.get("dtype"), device=kwargs.get("device"))
        with _Outermost() as outermost:
            out = self.__wrapped__(*args, **kwargs)
        if isinstance(out, torch.nn.Module):  # a factory: the module carries the check
            return checked_module(out, self._mechanism, self._subject, dtype=kwargs.get("dtype"),
                                  device=kwargs.get("device"), capability=self._capability)
        if outermost:
            check_outputs(self._where(), (args, kwargs), out)
        return out

    def _where(self) -> str:
        return f"{self._mechanism} (subject {self._subject})"

    def __getattr__(self, name: str):  # the factory's own attributes stay reachable
        return getattr(self.__wrapped__, name)

    def __repr__(self) -> str:
        return f"checked({self.__wrapped__!r})"


def declared_methods(mechanism: str) -> tuple[str, ...]:
    """The public methods (besides forward) that the mechanism's module Protocol declares, if any.

    Only declared methods are checked: a package's other methods may return what they like.
    A mechanism no one declares (or one without a module Protocol) gets forward only.
    """
    try:
        from fidelity.mechanisms.registry import project_mechanisms
        from fidelity import project

        record = project_mechanisms(project.current_or_none()).get(mechanism)
    except Exception:  # a broken declaration is reported by `fidelity list mechanisms`, not here
        return ()
    protocol = getattr(record, "module_interface", None)
    if protocol is None:
        return ()
    names = {n for klass in protocol.__mro__ if klass is not object for n, v in vars(klass).items()
             if callable(v) and not n.startswith("_")}
    return tuple(sorted(names - {"forward"}))


_classes: dict[tuple[type, str, str], type] = {}
_CONTRACT = "_fidelity_output_contract"


def _checked_class(cls: type, mechanism: str, subject: str, capability=None) -> type:
    """A subclass of cls (same name) whose __call__ and declared methods check their outputs, and
    whose __init__ keeps the `dtype=` / `device=` it was asked for.

    A subclass rather than a forward hook: the check then raises in this file's frame, after the
    subject returned, so the recorder sees the gate's assertion and not an error inside torch.
    The class keeps cls's signature, type hints and attributes, so a gate may introspect it.
    """
    key = (cls, mechanism, subject, capability)
    if key in _classes:
        return _classes[key]
    where = f"{mechanism} (subject {subject})"

    def wrap(name: str, original: Callable) -> Callable:
        @functools.wraps(original)
        def method(self, *args, **kwargs):
            within_capability.require(capability, where, (args, kwargs))
            with _Outermost() as outermost:
                out = original(self, *args, **kwargs)
            if outermost:
                asked = self.__dict__.get(_CONTRACT, {})
                check_outputs(where if name == "__call__" else f"{where}.{name}", (args, kwargs), out,
                              dtype=asked.get("dtype"), device=asked.get("device"))
            return out
        return method

    original_init = cls.__init__

    @functools.wraps(original_init)
    def __init__(self, *args, **kwargs):
        within_capability.require(capability, where, (args, kwargs), dtype=kwargs.get("dtype"),
                                  device=kwargs.get("device"))
        original_init(self, *args, **kwargs)
        dtype = kwargs.get("dtype")
        # through __dict__: no parameter, buffer or submodule, just what the factory was asked for
        self.__dict__[_CONTRACT] = {"dtype": dtype if isinstance(dtype, torch.dtype) else None,
                                    "device": kwargs.get("device")}

    namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                 "_fidelity_checked": True, "__init__": __init__, "__call__": wrap("__call__", cls.__call__)}
    for name in declared_methods(mechanism):
        original = getattr(cls, name, None)
        if inspect.isfunction(original):  # plain methods only: no properties, classmethods or attributes
            namespace[name] = wrap(name, original)
    _classes[key] = type(cls)(cls.__name__, (cls,), namespace)
    return _classes[key]


def checked_module(module: torch.nn.Module, mechanism: str, subject: str, *, dtype=None, device=None,
                   capability=None) -> torch.nn.Module:
    """The same module object, its class swapped for a checking subclass (isinstance still holds)."""
    cls = type(module)
    if not getattr(cls, "_fidelity_checked", False):
        module.__class__ = _checked_class(cls, mechanism, subject, capability)
    module.__dict__[_CONTRACT] = {"dtype": dtype if isinstance(dtype, torch.dtype) else None, "device": device}
    return module


def checked_mechanism(fn: Callable, mechanism: str, subject: str, capability=None) -> Callable:
    """A module class -> its checking subclass; any other callable -> a checking wrapper. With a
    Capability, a call outside its dtypes or devices is NotRun before the subject runs."""
    if isinstance(fn, type) and issubclass(fn, torch.nn.Module):
        return _checked_class(fn, mechanism, subject, capability)
    return _CheckedCallable(fn, mechanism, subject, capability)


class CheckedSubject:
    """A subject as gates see it: the same record, whose `get` returns output-checked mechanisms."""

    def __init__(self, subject):
        self._subject = subject

    def get(self, mechanism: str) -> Callable:
        return checked_mechanism(self._subject.get(mechanism), mechanism, self._subject.name,
                                 self._subject.capabilities.get(mechanism))

    def __getattr__(self, name: str):
        return getattr(self._subject, name)

    def __repr__(self) -> str:
        return f"checked({self._subject!r})"


def checked(subject) -> CheckedSubject:
    return subject if isinstance(subject, CheckedSubject) else CheckedSubject(subject)
