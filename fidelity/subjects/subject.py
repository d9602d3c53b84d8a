"""A subject: one implementation under test, described for the gates and the runner."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from fidelity.mechanisms.capability import Capability
from fidelity.mechanisms.refusal import NotRun

if TYPE_CHECKING:
    import torch

__all__ = ["Capability", "NotRun", "Subject"]


@dataclass(frozen=True)
class Subject:
    """One implementation under test.

    - `name`: short id printed in the run header ("torch", "triton", ...)
    - `description`: one line for the report
    - `mechanisms`: mechanism name -> callable or module factory (`fidelity list mechanisms` lists the
      known ones and `fidelity show mechanism:NAME` their interfaces; any name is accepted,
      fidelity.mechanisms.undeclared_mechanisms says which no known Mechanism declares)
    - `capabilities`: mechanism name -> Capability: the dtypes, devices and gradient routes it drives
    - `unavailable_reason`: returns None when the subject can run here, else why it cannot
    - `modules`: mechanism name -> the importable modules whose source implements it; the
      perturbation runner uses this to find the gates that cover a patched module

    What a subject cannot drive inside its capabilities (a convention, a layout, a parameter) it
    refuses by raising NotRun(reason): reported as not run, never passed and never failed.
    A project lists its subjects in pyproject's `subjects` ("my_pkg.subject:SUBJECT"); a gate receives
    each as its `subject` argument and calls `subject.get(mechanism)`.

    >>> import torch
    >>> from fidelity.mechanisms import Capability
    >>> from fidelity.subjects.subject import Subject
    >>> def scale(x, *, factor=2.0):
    ...     return factor * x
    >>> SUBJECT = Subject(name="demo", description="demo: y = c x in PyTorch", mechanisms={"scale": scale},
    ...                   capabilities={"scale": Capability(dtypes=("float32", "float64"), devices=("cpu",),
    ...                                                     backward=("autograd",))},
    ...                   unavailable_reason=lambda: None, modules={"scale": ("demo.scale",)})
    >>> SUBJECT.problems(), SUBJECT.supports("scale", "autograd", dtype=torch.float64, device="cpu")
    ([], True)
    >>> SUBJECT.get("scale")(torch.tensor([1.0, 2.0]))
    tensor([2., 4.])
    >>> SUBJECT.get("gain")
    Traceback (most recent call last):
    ...
    fidelity.mechanisms.refusal.NotRun: subject 'demo' does not implement 'gain'
    """

    name: str
    description: str
    mechanisms: Mapping[str, Callable]
    capabilities: Mapping[str, Capability]
    unavailable_reason: Callable[[], str | None]
    modules: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """What is wrong with this declaration, one sentence each; [] when nothing is. Loading the subject
        (fidelity.subjects.registry.load_reference) refuses it with these, naming it; they are not raised
        at construction, so one subject's typo does not lose the others declared in the same file."""
        found = []
        missing = sorted(set(self.mechanisms) - set(self.capabilities))
        if missing:
            found.append(f"no capabilities declared for {missing}; give each mechanism a "
                         "Capability(dtypes=..., devices=..., backward=...)")
        extra = sorted(set(self.capabilities) - set(self.mechanisms))
        if extra:
            found.append(f"capabilities declared for {extra}, which it does not provide")
        for mechanism, capability in sorted(self.capabilities.items()):
            if not isinstance(capability, Capability):
                found.append(f"the capability of {mechanism!r} is not a fidelity.mechanisms.Capability")
            else:
                found += [f"the capability of {mechanism!r}: {p}" for p in capability.problems]
        return found

    def available(self) -> bool:
        return self.unavailable_reason() is None

    def supports(self, mechanism: str, backward: str | None = None, *, dtype: torch.dtype | str | None = None,
                 device: torch.device | str | None = None) -> bool:
        """Whether this subject provides `mechanism` and its capability covers the route, dtype and device asked."""
        if mechanism not in self.mechanisms:
            return False
        return self.capabilities[mechanism].covers(backward=backward, dtype=dtype, device=device)

    def get(self, mechanism: str) -> Callable:
        """The callable or factory for `mechanism`; NotRun if this subject lacks it."""
        try:
            return self.mechanisms[mechanism]
        except KeyError:
            raise NotRun(f"subject {self.name!r} does not implement {mechanism!r}") from None
