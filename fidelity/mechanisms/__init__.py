"""Mechanisms: what a subject may provide, each with an interface documented by its Protocols.

- mechanism.py    the Mechanism record (name, summary, kind, interface, module_interface, equations)
- capability.py   the Capability record: dtypes, devices and gradient routes a subject drives
- refusal.py      NotRun, the one way a subject says "I cannot drive this"
- markers.py      Doc, Param, Submodule: facts written in Annotated inside the Protocols
- introspect.py   the Protocols read into JSON-able dicts; docs.py renders them for the terminal
- registry.py     the known mechanisms: built-ins, entry points (`fidelity.mechanisms`), references
- depth_attention.py, sinkhorn.py, block_attnres.py, mhc_residual.py, hyper_connection.py,
  loop_model.py, mhc_stack.py, hc_stack.py: the built-in declarations, each exposing MECHANISM

`fidelity show mechanism:NAME` prints one mechanism's documentation; `fidelity list mechanisms` lists them.
"""
from .capability import FORWARD_ONLY, ROUTES, Capability
from .mechanism import Mechanism
from .refusal import NotRun
from .registry import ENTRY_POINT_GROUP, MechanismLoadError, known_mechanisms, load_mechanism, undeclared_mechanisms

__all__ = [
    "ENTRY_POINT_GROUP",
    "FORWARD_ONLY",
    "ROUTES",
    "Capability",
    "Mechanism",
    "MechanismLoadError",
    "NotRun",
    "known_mechanisms",
    "load_mechanism",
    "undeclared_mechanisms",
]
