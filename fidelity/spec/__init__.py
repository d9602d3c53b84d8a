"""Loading and validating the YAML specs: one file per paper."""
from fidelity.spec.catalogue import Catalogue, Item
from fidelity.spec.errors import SpecError
from fidelity.spec.loader import SCHEMA_FILE, load_catalogue

__all__ = ["Catalogue", "Item", "SpecError", "SCHEMA_FILE", "load_catalogue"]
