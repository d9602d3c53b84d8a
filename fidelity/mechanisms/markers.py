"""Markers that document a Protocol in place, read by the renderer (docs.py) and the tests.

Written inside `typing.Annotated`, so each fact is typed once, in the Protocol itself:

    sources: Annotated[torch.Tensor, Doc("values v_i", shape="[L, ..., d]")]    an argument or a return
    queries: Annotated[torch.nn.Parameter, Param("[L, d]", "w_l", init="0")]    a registered nn.Parameter
    mhc: Annotated[MhcResidualModule, Submodule("the shared mHC block")]      a registered child module

Shapes are written in the paper's letters ([L, ..., d]); `..` / `...` are any leading axes;
`[]` is a 0-dimensional tensor.

A module mechanism documents its factory with Doc and the module it returns with Param (and Submodule);
`fidelity show mechanism:NAME` prints them, and the gates read the parameter names from them:

>>> from typing import Annotated, Protocol
>>> import torch
>>> from fidelity.mechanisms import Mechanism
>>> from fidelity.mechanisms.docs import render_text
>>> from fidelity.mechanisms.markers import Doc, Param
>>> class GainModule(Protocol):
...     "y = module(x) = g * x, over the last axis."
...     gain: Annotated[torch.nn.Parameter, Param("[d]", "the gain g", init="1")]
...     def forward(self, x: Annotated[torch.Tensor, Doc("the input x", shape="[..., d]")]
...                 ) -> Annotated[torch.Tensor, Doc("g x", shape="[..., d]")]: ...
>>> class GainFactory(Protocol):
...     "module = factory(d): a learned gain of width d."
...     def __call__(self, d: Annotated[int, Doc("the width d")]) -> GainModule: ...
>>> GAIN = Mechanism(name="gain", summary="y = g x, g learned (demo Eq. 2)", kind="module",
...                  interface=GainFactory, module_interface=GainModule, equations=("demo.eq2",))
>>> print(render_text(GAIN).split("module GainModule")[1])
<BLANKLINE>
  y = module(x) = g * x, over the last axis.
  parameters:
    gain  [d]  init 1  the gain g
  method forward(x) -> Tensor
    arguments:
      x  Tensor [..., d]  required  the input x
    returns: Tensor [..., d]  g x
  named_parameters() (every name a module of this interface registers):
    gain  [d]
<BLANKLINE>
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Doc:
    """An argument, a return value or a plain attribute: `text`, what it is (in the paper's words and
    letters), and, for a tensor, its `shape` in the paper's letters ("[..., d]"; None for a non-tensor)."""

    text: str
    shape: str | None = None


@dataclass(frozen=True)
class Param:
    """A registered nn.Parameter, the attribute it annotates being its name.

    - `shape`: in the paper's letters, e.g. "[L, d]"
    - `text`: what it is, e.g. "the pseudo-query w_l"
    - `init`: the value the factory initialises it to, as the paper states it ("0", "1", "N(0, 0.02)"), or None
    - `when`: constructor keywords -> values under which the parameter exists (empty: always), e.g.
      {"learned_gain": True}; otherwise the module registers no parameter of that name.
    """

    shape: str
    text: str
    init: str | None = None
    when: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Submodule:
    """A registered child nn.Module; its own parameters appear as `<name>.<parameter>`.

    The annotated type is the child's Protocol (itself documented with Param / Submodule); `text` says what
    the child is, and `when` as for `Param`.
    """

    text: str
    when: Mapping[str, Any] = field(default_factory=dict)
