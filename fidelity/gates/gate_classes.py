"""The gate classes: what kind of promise a gate holds a subject to, named once.

A gate may say which class it belongs to, `@pytest.mark.gate(..., gate_class="gradient_reach")`;
the ledger's coverage table shows, per mechanism, which classes hold it. A gate without a class
is a plain fixture or property gate. An unknown class is refused at collection, with the closest
known names (a typo would otherwise drop a gate from the table in silence; marker_names.py).
"""
from __future__ import annotations

from fidelity.gates.marker_names import UnknownMarkerName, closest_names

GATE_CLASSES: dict[str, str] = {
    "defaults_as_shipped": "called or constructed with no optional argument, equal to the oracle at the spec's values",
    "init_through_module": "the init the factory creates, read from the module, never a value the gate supplies",
    "gradients_finite_differences": "float64 backward through the module against central differences, "
                                    "for the input and every parameter",
    "gradient_reach": "every input and parameter receives a non-zero gradient (a detached path reads zero)",
    "gradients_from_oracle": "the subject's gradients equal the oracle's exact or 40-digit Jacobian",
    "parameters_alive": "moving each parameter moves the output by at least half what the oracle says",
    "stateless": "one object called on A, on other inputs, then on A again gives A's bits "
                 "and leaves its state as after the first A",
    "dtype_device": "every floating output keeps the input's dtype and device",
    "train_eval": "a module gives the same bits in eval mode as in training mode "
                  "(no mechanism here has a mode-dependent part)",
}
"""class name -> the promise, one line (the ledger prints it beside the coverage table)."""


class UnknownGateClass(UnknownMarkerName):
    """A gate marker names a class GATE_CLASSES does not define."""


def check_gate_class(name: str | None, where: str) -> str | None:
    """`name` if it is a known class (or None); UnknownGateClass naming the closest known ones otherwise."""
    if name is not None and name not in GATE_CLASSES:
        raise UnknownGateClass(f"{where}: gate_class {name!r} is not one of the gate classes "
                               f"({closest_names(name, GATE_CLASSES)}); fix the name "
                               "(fidelity.gates.gate_classes says what each class holds)")
    return name


GRADIENT = ("gradients_finite_differences", "gradient_reach", "gradients_from_oracle")
"""Classes whose every instance takes a gradient: a forward-only subject (Capability backward=("none",))
is not run on them, with the reason fidelity.gates.routes gives."""

MODULE_ONLY = ("init_through_module", "parameters_alive", "train_eval")
"""Classes that hold a module's own parameters or mode: a function mechanism has none, so they do not apply to it."""


def applies(gate_class: str, mechanism_kind: str) -> bool:
    """Whether `gate_class` can hold a mechanism of `mechanism_kind` ("function" or "module").

    >>> from fidelity.gates.gate_classes import GATE_CLASSES, applies
    >>> applies("stateless", "function"), applies("train_eval", "function"), applies("train_eval", "module")
    (True, False, True)
    >>> GATE_CLASSES["parameters_alive"]
    'moving each parameter moves the output by at least half what the oracle says'
    """
    return mechanism_kind == "module" or gate_class not in MODULE_ONLY


def applies_to(gate_class: str, mechanism) -> bool:
    """Whether `gate_class` can hold `mechanism`, read from its declaration: `applies` by its kind, and
    defaults_as_shipped only where its interface declares an optional argument (with none, a call "as shipped"
    is the call every fixture gate makes). A declaration without an interface is judged by its kind alone.

    >>> from fidelity.gates.gate_classes import applies_to
    >>> from fidelity.mechanisms.registry import known_mechanisms
    >>> sinkhorn = known_mechanisms()["sinkhorn"]  # sinkhorn(logits, *, t_max=20, backward="autograd")
    >>> applies_to("defaults_as_shipped", sinkhorn), applies_to("train_eval", sinkhorn)
    (True, False)
    """
    if not applies(gate_class, getattr(mechanism, "kind", "function")):
        return False
    if gate_class != "defaults_as_shipped" or getattr(mechanism, "interface", None) is None:
        return True
    from fidelity.gates.declared_signatures import optional_names, signatures

    return any(optional_names(sig) for sig in signatures(mechanism))
