"""Loading and validating the YAML specs: one file per paper."""
from fidelity.spec.catalogue import Catalogue, Item
from fidelity.spec.errors import SpecError

__all__ = ["Catalogue", "Item", "SpecError", "SCHEMA_FILE", "load_catalogue"]
_FROM_LOADER = ("SCHEMA_FILE", "load_catalogue")


def __getattr__(name: str):
    # the loader imports jsonschema (~0.07 s): a child that only reads kept spec values (values.py) never needs it
    if name in _FROM_LOADER:
        from fidelity.spec import loader

        return getattr(loader, name)
    raise AttributeError(f"module 'fidelity.spec' has no attribute {name!r}")
