"""A pytest plugin for `fidelity check --subject`: what each gate instance was given.

Loaded into the child gate run (`-p fidelity.gates.instance_inputs`) with INPUTS_ENV naming a
folder; each process writes there one JSON line per instance: its node id, its parameters as
text (the subject and device apart) and the calls the gate made to the subject's mechanisms
(a function's call, or a module factory's: its arguments summarised, tensors as shape, dtype and
device). fidelity.gaterun.instance_view joins them to the outcomes.

The calls are seen where every gate's call passes: output_contract's checked wrapper (the plugin
wraps its __call__ in this process only); a built module's own forward calls are not listed.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

INPUTS_ENV = "FIDELITY_INSTANCE_INPUTS"
CALLS_KEPT = 40   # per instance; the rest are counted
TEXT_LIMIT = 200  # characters of one parameter's or one call's text

_current: dict | None = None


def text(value) -> str:
    """A parameter or argument as a short text: a tensor as its shape, dtype and device."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"tensor[{', '.join(map(str, value.shape))}] {str(value.dtype).removeprefix('torch.')} {value.device}"
    if isinstance(value, (tuple, list)) and len(value) <= 8:
        inner = ", ".join(text(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.nn.Module):
        return type(value).__name__
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    shown = repr(value)
    return shown if len(shown) <= TEXT_LIMIT else shown[:TEXT_LIMIT - 3] + "..."


def call_text(name: str, args: tuple, kwargs: dict) -> str:
    shown = ", ".join([*(text(a) for a in args), *(f"{k}={text(v)}" for k, v in kwargs.items())])
    line = f"{name}({shown})"
    return line if len(line) <= TEXT_LIMIT else line[:TEXT_LIMIT - 3] + "..."


def instance_inputs(item) -> dict[str, str]:
    """The instance's parameters as text; the (subject, device) pair as two entries."""
    params = dict(getattr(getattr(item, "callspec", None), "params", {}) or {})
    pair = params.pop("subject_on_device", None)
    shown = {}
    if isinstance(pair, tuple) and len(pair) == 2:
        shown["subject"], shown["device"] = getattr(pair[0], "name", text(pair[0])), str(pair[1])
    shown.update({name: value if isinstance(value, str) else text(value) for name, value in params.items()})
    return shown


def _record_call(name: str, args: tuple, kwargs: dict) -> None:
    if _current is None:
        return
    if len(_current["calls"]) < CALLS_KEPT:
        _current["calls"].append(call_text(name, args, kwargs))
    else:
        _current["calls_not_shown"] += 1


def _watch_the_subjects_calls() -> None:
    from fidelity.gates import output_contract

    checked = output_contract._CheckedCallable
    original = checked.__call__

    def recorded(self, *args, **kwargs):
        _record_call(self._mechanism, args, kwargs)
        return original(self, *args, **kwargs)

    checked.__call__ = recorded


def pytest_configure(config):
    if os.environ.get(INPUTS_ENV):
        _watch_the_subjects_calls()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _current
    folder = os.environ.get(INPUTS_ENV)
    if not folder:
        return (yield)
    _current = {"nodeid": item.nodeid, "inputs": instance_inputs(item), "calls": [], "calls_not_shown": 0}
    try:
        return (yield)
    finally:
        line, _current = json.dumps(_current, sort_keys=True), None
        with open(Path(folder) / f"inputs.{os.getpid()}.jsonl", "a", encoding="utf-8") as out:
            out.write(line + "\n")
