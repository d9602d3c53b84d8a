"""What a subject can drive for one mechanism: dtypes, devices, gradient routes and the optional inputs it lacks."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a name is judged: a process that only reads declarations pays no torch
    import torch

ROUTES = ("autograd", "manual")
"""Gradient routes: "autograd" (torch differentiates the forward), "manual" (a hand-written backward)."""
FORWARD_ONLY = ("none",)
"""The `backward` of a subject that computes forward only (no gradient at all)."""
STREAM_LAYOUTS = ("replicated", "sliced", "none")
"""How a hidden-in, hidden-out stack holds its n streams: "replicated", the papers' (each stream starts as the
hidden, the readout sums them: HC Alg. 1, mHC §3), "sliced" (the hidden split into n slices, concatenated back), or
"none" (no streams: the hidden itself is the residual, which the gates hold as one stream, n = 1)."""
READOUTS = ("sum", "mean")
"""How replicated streams are read back into a hidden: "sum", the papers' (HC Alg. 1), or "mean" (the sum over n)."""
INFERABLE = ("d",)
"""Arguments of a stack factory a package may take from its input instead: "d", the width, read off the hidden."""


def dtype_name(dtype: torch.dtype | str) -> str:
    """torch.float32 or "float32" -> "float32"."""
    return str(dtype).removeprefix("torch.")


def device_type(device: torch.device | str) -> str:
    """torch.device("cuda:1"), "cuda:1" or "cuda" -> "cuda"."""
    import torch

    return torch.device(device).type


@dataclass(frozen=True)
class Capability:
    """The dtypes, devices and gradient routes a subject drives for one mechanism.

    - `dtypes`: torch dtype names, e.g. ("float32", "float64")
    - `devices`: device types, e.g. ("cpu", "cuda")
    - `backward`: gradient routes among ROUTES, or ("none",) for a forward-only subject
    - `lacks`: optional inputs of the mechanism's interface the subject does not have, by parameter name
      (e.g. ("gain",): a key norm with no learned gain). A gate to which the input is incidental
      calls without it (the interface's None); a gate that holds it is not run, saying so
      (fidelity.gates.optional_inputs)
    - `note`: one line on a limit the other fields cannot say (e.g. "cpu only under TRITON_INTERPRET=1")
    - `streams`: for a stack that takes a hidden and returns one (mhc_stack, hc_stack): its stream layout, one of
      STREAM_LAYOUTS, or "" (not said). A gate that holds an identity only one layout shows through the
      stack runs where that layout is declared and is not run elsewhere, saying so
      (fidelity.gates.stream_layout)
    - `readout`: for replicated streams: how the stack reads them back into a hidden, one of READOUTS; "sum" (the
      papers') unless said. A gate that holds what the readout makes of n copies of the hidden expects n
      copies for "sum" and one for "mean" (fidelity.gates.stream_layout)
    - `infers`: factory arguments the package does not take but reads off its input, among INFERABLE: ("d",) for a
      stack built without a width. The factory is still handed d (and drops it); a gate that asks the
      package to refuse a d it never receives is not run, saying so (fidelity.gates.stream_layout)
    - `keeps_state`: state the subject changes on purpose between calls, as {path pattern: reason} (kept as a tuple
      of pairs): e.g. {"rng:torch": "dropout draws from it in training mode"}. Patterns are fnmatch
      patterns on the stateless gates' snapshot paths (fidelity.gates.state_snapshot: "rng:torch",
      "*._kernels", "mypkg.core:_CACHE"); a pattern covers what lies under the path it matches. The
      stateless gates do not count what a declaration covers and say what they were told, and a
      declared pattern that nothing matched is said too (fidelity.gates.statelessness)

    A name none of these knows (a typo: "float33") is one of `problems`, which loading the subject
    reports, naming it. A gate instance outside the capability is not run; inside it, a subject
    that still cannot drive a case raises NotRun with the reason. A forward-only subject is called without
    `backward=`: every forward gate runs on it once, no gradient gate does, for function and module
    mechanisms alike (fidelity.gates.routes).

    >>> import torch
    >>> from fidelity.mechanisms import Capability
    >>> drives = Capability(dtypes=("float32", "float64"), devices=("cpu", "cuda"), backward=("autograd",))
    >>> drives.covers(dtype=torch.float32, device="cuda:1"), drives.covers(dtype=torch.float16), drives.problems
    (True, False, ())
    >>> Capability(dtypes=("float33",), devices=("cpu",), backward=("none",)).problems  # forward only, a typo
    ("Capability.dtypes: 'float33' is not a torch dtype name (e.g. 'float32')",)
    """

    dtypes: tuple[str, ...]
    devices: tuple[str, ...]
    backward: tuple[str, ...]
    note: str = ""
    lacks: tuple[str, ...] = ()
    streams: str = ""
    keeps_state: tuple[tuple[str, str], ...] = ()
    readout: str = "sum"
    infers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("dtypes", "devices", "backward", "lacks", "infers"):
            if isinstance(getattr(self, name), list):  # a list given for a tuple: `problems` judges the rest
                object.__setattr__(self, name, tuple(getattr(self, name)))
        if isinstance(self.keeps_state, dict):  # {pattern: reason}, kept as pairs so the record stays hashable
            object.__setattr__(self, "keeps_state", tuple(self.keeps_state.items()))

    @property
    def problems(self) -> tuple[str, ...]:
        """What is wrong with this declaration, one sentence each; () when nothing is.

        Not raised at construction: an adapter file declares several subjects at import, and a typo in
        one capability would lose every subject of that file. Loading a subject names its problems,
        scoped to it (fidelity.subjects.registry.load_reference)."""
        found = []
        for name in ("dtypes", "devices", "backward"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value:
                found.append(f"Capability.{name} must be a non-empty tuple of names, got {value!r}")
        if found:
            return tuple(found)
        import torch

        for name in self.dtypes:
            if not isinstance(getattr(torch, str(name), None), torch.dtype):
                found.append(f"Capability.dtypes: {name!r} is not a torch dtype name (e.g. 'float32')")
        for name in self.devices:
            try:
                if device_type(name) != name:
                    raise ValueError
            except (RuntimeError, ValueError, TypeError):
                found.append(f"Capability.devices: {name!r} is not a device type (e.g. 'cpu', 'cuda')")
        if not isinstance(self.lacks, tuple) or not all(isinstance(n, str) and n.isidentifier() for n in self.lacks):
            found.append(f"Capability.lacks must be a tuple of parameter names (e.g. ('gain',)), got {self.lacks!r}")
        if self.streams not in ("", *STREAM_LAYOUTS):
            found.append(f"Capability.streams: {self.streams!r} is not a stream layout; use one of {STREAM_LAYOUTS}")
        found += stack_shape_problems(self.streams, self.readout, self.infers)
        found += kept_state_problems(self.keeps_state)
        if self.backward != FORWARD_ONLY:
            unknown = [r for r in self.backward if r not in ROUTES]
            if unknown:
                found.append(f"Capability.backward: unknown routes {unknown}; use routes among {ROUTES}, "
                             f"or {FORWARD_ONLY} alone for a forward-only subject")
        return tuple(found)

    @property
    def routes(self) -> tuple[str, ...]:
        """The gradient routes; () for a forward-only subject."""
        return () if self.backward == FORWARD_ONLY else self.backward

    def covers(self, *, backward: str | None = None, dtype: torch.dtype | str | None = None,
               device: torch.device | str | None = None) -> bool:
        """Whether a request (any of route, dtype, device; None = not asked) lies inside this capability."""
        if backward is not None and backward not in self.routes:
            return False
        if dtype is not None and dtype_name(dtype) not in self.dtypes:
            return False
        return device is None or device_type(device) in self.devices


def stack_shape_problems(streams, readout, infers) -> list[str]:
    """What is wrong with a stack's readout and inferred arguments, each said with what to write instead."""
    found = []
    if readout not in READOUTS:
        found.append(f"Capability.readout: {readout!r} is not a readout; use one of {READOUTS}")
    elif readout != "sum" and streams != "replicated":
        found.append(f"Capability.readout: {readout!r} reads replicated streams; declare streams='replicated' with it")
    if not isinstance(infers, tuple) or not all(isinstance(n, str) for n in infers):
        found.append(f"Capability.infers must be a tuple of argument names (e.g. ('d',)), got {infers!r}")
    else:
        found += [f"Capability.infers: {n!r} is not an argument a factory may leave to the package; use {INFERABLE} "
                  "for a stack that takes its width from the hidden" for n in infers if n not in INFERABLE]
    return found


def kept_state_problems(keeps_state) -> list[str]:
    """What is wrong with a Capability.keeps_state declaration: each entry must name what is kept and why."""
    example = "e.g. {'rng:torch': 'dropout draws from it in training mode'}"
    if not isinstance(keeps_state, tuple) or not all(isinstance(e, tuple) and len(e) == 2 for e in keeps_state):
        return [f"Capability.keeps_state must map each path pattern the subject changes to the reason it keeps it, "
                f"{example}; got {keeps_state!r}"]
    found = []
    for pattern, reason in keeps_state:
        if not isinstance(pattern, str) or not pattern.strip("*?[]!.:# "):
            found.append(f"Capability.keeps_state: {pattern!r} names no state; name what is kept (a path of the "
                         "stateless gate's message, e.g. 'rng:torch', '*._kernels')")
        if not isinstance(reason, str) or not reason.strip():
            found.append(f"Capability.keeps_state: {pattern!r} gives no reason; say why the subject keeps it, {example}")
    return found
