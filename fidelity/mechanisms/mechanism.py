"""The Mechanism record: one mechanism a subject may provide, and the Protocols that define it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

KINDS = ("function", "module")


@dataclass(frozen=True)
class Mechanism:
    """One mechanism: its name, what it computes, and its interface.

    - `name`: the key a Subject's `mechanisms` uses and a gate's `mechanism=` names (an identifier)
    - `summary`: one line
    - `kind`: "function": the subject provides a callable that `interface` describes;
      "module": the subject provides a factory (`interface`) returning an nn.Module that
      `module_interface` describes
    - `interface`: a typing.Protocol whose __call__ is the callable's or the factory's signature,
      documented with fidelity.mechanisms.markers (Doc in Annotated)
    - `module_interface`: for "module", the Protocol of the module the factory returns (Param,
      Submodule, plain attributes, methods); None for "function"
    - `equations`: spec equation ids (e.g. "mhc.eq9") whose gates hold this mechanism
    - `factory_problem`: optional, what is wrong with a subject's callable or factory for this mechanism
      that its signature shows (one sentence), or None; loading the subject reports it, so a shape the
      gates cannot use is one line, not an error in every gate instance

    A project lists its declarations in pyproject's `mechanisms` ("my_pkg.mechanism:MECHANISM");
    `fidelity show mechanism:NAME` prints one as below. A declaration that is inconsistent is refused
    at construction, saying what to fix.

    >>> from typing import Annotated, Protocol
    >>> import torch
    >>> from fidelity.mechanisms import Mechanism
    >>> from fidelity.mechanisms.docs import render_text
    >>> from fidelity.mechanisms.markers import Doc
    >>> class Scale(Protocol):
    ...     "y = fn(x, *, factor=2): every element times `factor`."
    ...     def __call__(self, x: Annotated[torch.Tensor, Doc("the input x", shape="[..., d]")], *,
    ...                  factor: Annotated[float, Doc("the factor c")] = 2.0,
    ...                  ) -> Annotated[torch.Tensor, Doc("y = c x", shape="[..., d]")]: ...
    >>> SCALE = Mechanism(name="scale", summary="y = c x (demo Eq. 1)", kind="function", interface=Scale,
    ...                   module_interface=None, equations=("demo.eq1",))
    >>> print(render_text(SCALE))
    mechanism scale (function)
      y = c x (demo Eq. 1)
      equations: demo.eq1
      declared in: ...
      a subject provides: a callable with this signature
      refusals: raise NotRun(reason) (fidelity.mechanisms.NotRun) for what the subject cannot drive: reported as not run, never failed
    <BLANKLINE>
    callable Scale: fn(x, *, factor=2.0) -> Tensor
      y = fn(x, *, factor=2): every element times `factor`.
      arguments:
        x       Tensor [..., d]  required     the input x
        factor  float            default 2.0  the factor c
      returns: Tensor [..., d]  y = c x
    <BLANKLINE>
    >>> Mechanism(name="scale", summary="y = c x", kind="module", interface=Scale, module_interface=None,
    ...           equations=("demo.eq1",))
    Traceback (most recent call last):
    ...
    ValueError: mechanism 'scale': a 'module' mechanism needs a module_interface, a 'function' mechanism has none
    """

    name: str
    summary: str
    kind: Literal["function", "module"]
    interface: type
    module_interface: type | None
    equations: tuple[str, ...]
    factory_problem: Callable[[Callable], str | None] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"mechanism name {self.name!r} must be an identifier (letters, digits, _)")
        if "\n" in self.summary or not self.summary.strip():
            raise ValueError(f"mechanism {self.name!r}: summary must be one non-empty line")
        if self.kind not in KINDS:
            raise ValueError(f"mechanism {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if not isinstance(self.interface, type) or "__call__" not in _members(self.interface):
            raise TypeError(f"mechanism {self.name!r}: interface must be a Protocol class defining __call__")
        if (self.kind == "module") != (self.module_interface is not None):
            raise ValueError(f"mechanism {self.name!r}: a 'module' mechanism needs a module_interface, "
                             "a 'function' mechanism has none")
        if self.module_interface is not None and not isinstance(self.module_interface, type):
            raise TypeError(f"mechanism {self.name!r}: module_interface must be a Protocol class")
        if isinstance(self.equations, str):
            raise TypeError(f"mechanism {self.name!r}: equations must be a sequence of ids, not one string")
        object.__setattr__(self, "equations", tuple(self.equations))


def _members(cls: type) -> set[str]:
    return {name for klass in cls.__mro__ if klass is not object for name in vars(klass)}
