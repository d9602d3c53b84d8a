"""The generic gate classes as a library: hold any declared mechanism to them with one line per mechanism.

- suite.py     GateClassesFor, the test class a project subclasses once per mechanism
- classes.py   each class's gate body (stateless, dtype_device, train_eval, defaults_as_shipped,
               gradients_finite_differences, gradient_reach, parameters_alive, refusals)
- instance.py  one gate instance: the subject's mechanism on a device, in a dtype, at the example
- example.py   a fixture's inputs and params placed on the mechanism's declared signatures
"""
from fidelity.gates.library.suite import GateClassesFor

__all__ = ["GateClassesFor"]
