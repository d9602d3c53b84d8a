"""A subject is asked only for what it declares it can drive: its Capability per mechanism.

A gate instance whose inputs (or a factory's `dtype=` / `device=`) fall outside the subject's
declared dtypes or devices is NOT RUN, with the declaration as the reason, before the
subject is called: a float32-only package is never judged on float64 input it may cast, and
its adapter need not repeat the refusal by hand. Inside the capability, whatever the subject
answers is judged (a NotRun it raises itself is still honoured).
"""
from __future__ import annotations

from typing import Any

import torch

from fidelity.gates.tensors import floating_tensors
from fidelity.mechanisms import Capability, NotRun
from fidelity.mechanisms.capability import device_type, dtype_name


def require(capability: Capability | None, where: str, inputs: Any, *, dtype=None, device=None) -> None:
    """NotRun when a floating input, or the dtype / device asked of a factory, lies outside `capability`."""
    if capability is None:
        return
    dtypes = {dtype_name(t.dtype) for t in floating_tensors(inputs)}
    devices = {t.device.type for t in floating_tensors(inputs)}
    if isinstance(dtype, torch.dtype):
        dtypes.add(dtype_name(dtype))
    if device is not None:
        devices.add(device_type(device))
    outside = sorted(dtypes - set(capability.dtypes))
    if outside:
        raise NotRun(f"{where} declares dtypes {', '.join(capability.dtypes)}; asked for {', '.join(outside)}")
    outside = sorted(devices - set(capability.devices))
    if outside:
        raise NotRun(f"{where} declares devices {', '.join(capability.devices)}; asked for {', '.join(outside)}")
