"""Loading and validating the YAML specs: one file per paper."""
from fidelity.spec.catalogue import Catalogue, Item
from fidelity.spec.errors import SpecError
from fidelity.spec.loader import DEFAULT_SPECS_DIR, load_catalogue

__all__ = ["Catalogue", "Item", "SpecError", "DEFAULT_SPECS_DIR", "load_catalogue"]
