"""Shared plumbing of the adapters: lazy imports, availability, refusals, observation."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Callable, Iterable

import torch
from torch.overrides import TorchFunctionMode

from fidelity.subjects.subject import NotRun

INSTALL_HINT = "pip install 'fidelity[thirdparty]'"


def unavailable(distribution: str, *modules: str) -> Callable[[], str | None]:
    """An `unavailable_reason` for a package: None when every module imports, else why not."""

    def reason() -> str | None:
        tops = [m.split(".")[0] for m in modules]
        for name in [*dict.fromkeys(tops), *modules]:  # the packages first, then their modules
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name == name.split(".")[0]:  # the package itself, not a submodule or a dependency
                    return f"package {distribution} not installed ({INSTALL_HINT})"
                return f"package {distribution} does not import: {type(exc).__name__}: {exc}"
            except Exception as exc:  # noqa: BLE001 - any import-time failure makes the subject unavailable
                return f"package {distribution} does not import: {type(exc).__name__}: {exc}"
        return None

    return reason


def load(module: str) -> ModuleType:
    """Import a package module at call time (never at adapter import time)."""
    return importlib.import_module(module)


def require_route(package: str, mechanism: str, backward: str, routes: Iterable[str] = ("autograd",)) -> None:
    routes = tuple(routes)
    if backward not in routes:
        if backward == "manual":
            raise NotRun(
                f"{package}: {mechanism} has no hand-written backward; only {routes} (torch autograd through the "
                "package's forward)"
            )
        raise ValueError(f"unknown backward route {backward!r}; expected one of ('autograd', 'manual')")


def require_float32(package: str, where: str, *dtypes: torch.dtype) -> None:
    """Refuse any dtype but float32 for a package that computes in float32 internally."""
    for dtype in dtypes:
        if dtype != torch.float32:
            raise NotRun(
                f"{package}: {where} supports only float32 (it computes in float32, calling .float() on its "
                f"inputs); a {dtype} request is not run rather than silently computed in float32"
            )


class Observe(TorchFunctionMode):
    """Record the results of chosen torch functions while the package runs, changing nothing.

    `with Observe(torch.nn.functional.softmax) as seen: out = package_call(...)`, then
    `seen.single()` is the one tensor that softmax returned inside the call (the very tensor in
    the autograd graph). More or fewer calls than expected is a RuntimeError naming them.
    """

    def __init__(self, *funcs: Callable) -> None:
        super().__init__()
        self.funcs = funcs
        self.results: list = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in self.funcs:
            self.results.append(out)
        return out

    def single(self, what: str):
        if len(self.results) != 1:
            names = ", ".join(getattr(f, "__name__", repr(f)) for f in self.funcs)
            raise RuntimeError(
                f"cannot observe {what}: the package called {names} {len(self.results)} times in this call, not once"
            )
        return self.results[0]


class LastOutput:
    """A forward hook that keeps the output of the last call of a submodule during a `with` block."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module
        self.outputs: list = []
        self._handle = None

    def __enter__(self) -> "LastOutput":
        self._handle = self.module.register_forward_hook(lambda _m, _i, out: self.outputs.append(out))
        return self

    def __exit__(self, *exc) -> None:
        assert self._handle is not None
        self._handle.remove()

    def last(self, what: str):
        if not self.outputs:
            raise RuntimeError(f"cannot observe {what}: the package never called {type(self.module).__name__}")
        return self.outputs[-1]


def refuse(package: str, message: str):
    """A property body for an interface parameter the package does not have."""

    def getter(self):
        raise NotRun(f"{package}: {message}")

    return property(getter)
