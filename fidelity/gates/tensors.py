"""The floating tensors in a call's arguments or result, looking into tuples, lists and dict values."""
from __future__ import annotations

from typing import Any, Iterator

import torch


def floating_tensors(obj: Any) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point():
            yield obj
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            yield from floating_tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from floating_tensors(x)
