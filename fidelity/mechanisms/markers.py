"""Markers that document a Protocol in place, read by the renderer (docs.py) and the tests.

Written inside `typing.Annotated`, so each fact is typed once, in the Protocol itself:

    sources: Annotated[torch.Tensor, Doc("values v_i", shape="[L, ..., d]")]    an argument or a return
    queries: Annotated[torch.nn.Parameter, Param("[L, d]", "w_l", init="0")]    a registered nn.Parameter
    mhc: Annotated[MhcResidualModule, Submodule("the shared mHC block")]      a registered child module

Shapes are written in the paper's letters ([L, ..., d]); `..` / `...` are any leading axes;
`[]` is a 0-dimensional tensor.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Doc:
    """An argument, a return value or a plain attribute: what it is and, for a tensor, its shape."""

    text: str
    shape: str | None = None


@dataclass(frozen=True)
class Param:
    """A registered nn.Parameter: shape, meaning, initial value, and when it exists.

    when  constructor keywords -> values under which the parameter exists (empty: always), e.g.
          {"learned_gain": True}; otherwise the module registers no parameter of that name.
    """

    shape: str
    text: str
    init: str | None = None
    when: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Submodule:
    """A registered child nn.Module; its own parameters appear as `<name>.<parameter>`.

    The annotated type is the child's Protocol (itself documented with Param / Submodule).
    """

    text: str
    when: Mapping[str, Any] = field(default_factory=dict)
