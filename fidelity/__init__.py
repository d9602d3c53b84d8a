"""fidelity: prove an ML implementation is faithful to the paper it came from."""

__version__ = "0.1.0"
